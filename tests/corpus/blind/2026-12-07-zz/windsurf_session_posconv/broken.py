"""Windsurfing / kitesurfing session logs: manoeuvre tagging with a conv-positional transformer.

Source: https://github.com/microsoft/unilm/pull/999 ("Update L. 116 of backbone.py").
Fine-tuning the BEATs audio backbone on their own data, the authors hit "one of the
variables needed for gradient computation has been modified by an inplace
operation": the encoder's convolutional positional embedding is computed from
``x`` and then added back with ``x += x_conv``, overwriting the input the
convolution saved. The PR replaced it with an out-of-place sum. Here the same
encoder layout (feature projection, layer norm, grouped Conv1d positional
embedding, transformer layers) tags 48-second windows of a board-mounted logger
(speed, heading, apparent wind, heel, acceleration, strap load) as planing run,
gybe, tack, waterstart or crash.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

MANOEUVRES = ("planing", "gybe", "tack", "waterstart", "crash")
SETTINGS = dict(n_features=8, window=48, d_model=32, n_heads=4, n_layers=2,
                conv_pos=9, conv_pos_groups=4, lr=5e-4, weight_decay=0.01,
                batch=16, max_updates=4)


def simulate_sessions(n, cfg):
    t = torch.arange(cfg["window"]).float()
    labels = torch.randint(0, len(MANOEUVRES), (n,))
    logs = 0.3 * torch.randn(n, cfg["window"], cfg["n_features"])
    for i, lab in enumerate(labels.tolist()):
        turn = torch.sigmoid((t - 24.0) / (2.0 + lab))
        logs[i, :, 0] += 18.0 / 10 * (1 - 0.6 * turn * (lab in (1, 2)))
        logs[i, :, 1] += torch.cos(math.pi * turn * (lab in (1, 2)))
        logs[i, :, 2] += torch.sin(math.pi * turn * (lab in (1, 2)))
        logs[i, :, 4] += 1.5 * (lab == 4) * (t > 30).float()
    return logs, labels


class SessionEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.post_extract_proj = nn.Linear(cfg["n_features"], d)
        self.layer_norm = nn.LayerNorm(d)
        self.pos_conv = nn.Sequential(
            nn.Conv1d(d, d, kernel_size=cfg["conv_pos"], padding=cfg["conv_pos"] // 2,
                      groups=cfg["conv_pos_groups"]),
            nn.GELU(),
        )
        layer = nn.TransformerEncoderLayer(d, cfg["n_heads"], dim_feedforward=2 * d,
                                           dropout=0.0, batch_first=True)
        self.layers = nn.TransformerEncoder(layer, cfg["n_layers"])

    def extract_features(self, logs):
        x = self.layer_norm(self.post_extract_proj(logs))
        x_conv = self.pos_conv(x.transpose(1, 2))
        x_conv = x_conv.transpose(1, 2)
        x += x_conv
        return self.layers(x)


class ManoeuvreTagger(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.encoder = SessionEncoder(cfg)
        self.head = nn.Linear(cfg["d_model"], len(MANOEUVRES))

    def forward(self, logs):
        feats = self.encoder.extract_features(logs)
        return self.head(feats.mean(dim=1))


def batches(logs, labels, size):
    perm = torch.randperm(logs.size(0))
    for s in range(0, logs.size(0) - size + 1, size):
        idx = perm[s:s + size]
        yield logs[idx], labels[idx]


def run(cfg):
    logs, labels = simulate_sessions(96, cfg)
    tagger = ManoeuvreTagger(cfg)
    adamw = torch.optim.AdamW(tagger.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])

    def step_fn(batch):
        x, y = batch
        tag_loss = F.cross_entropy(tagger(x), y, label_smoothing=0.05)
        adamw.zero_grad(set_to_none=True)
        tag_loss.backward()
        torch.nn.utils.clip_grad_norm_(tagger.parameters(), 1.0)
        adamw.step()
        return tag_loss.item()

    updates = 0
    while updates < cfg["max_updates"]:
        for batch in batches(logs, labels, cfg["batch"]):
            print(f"update {updates}: loss {step_fn(batch):.4f}")
            updates += 1
            if updates >= cfg["max_updates"]:
                break


if __name__ == "__main__":
    run(SETTINGS)
