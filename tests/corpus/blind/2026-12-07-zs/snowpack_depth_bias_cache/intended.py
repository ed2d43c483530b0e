"""Avalanche danger from snow-pit profiles: a small attention model over the layers of a pit.

Source: https://github.com/pytorch/torchdynamo/issues/1845 ("levit_128: Trying to backward
through the graph a second time..."). The benchmark harness trained timm's LeViT for a few steps
with the model in eval mode (so that runs can be compared); LeViT's attention layers keep a
per-device cache of the gathered attention biases (``attention_biases[:, attention_bias_idxs]``)
whenever ``self.training`` is False, and clear it only in ``train(True)``. The cached tensor was
built with the graph of the first step; the second step's backward reaches the freed gather and
fails, in eager mode too.

Reduction: a snowpack model with the same relative-position bias cache (over depth offsets
between layers of a snow pit instead of image patches), trained with ``model.eval()`` because the
config asks for deterministic runs (dropout off). The training setting is the writer's.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "n_layers": 12,       # layers recorded per snow pit
    "n_feats": 6,         # density, grain size, hand hardness, temperature, grain type, wetness
    "d_model": 32,
    "heads": 4,
    "blocks": 2,
    "danger_levels": 5,
    "batch": 16,
    "epochs": 3,
    "lr": 2e-3,
    "deterministic": True,
}


def make_pits(n, cfg, gen):
    x = torch.randn(n, cfg["n_layers"], cfg["n_feats"], generator=gen)
    weak = (x[:, :, 1] - x[:, :, 2]).amax(dim=1)          # big grains over hard crust
    load = x[:, : cfg["n_layers"] // 3, 0].mean(dim=1)   # new snow on top
    score = weak + 0.5 * load
    edges = torch.tensor([-1.0, 0.0, 1.0, 2.0])
    y = torch.bucketize(score, edges)
    return x, y


class DepthAttention(nn.Module):
    def __init__(self, d_model, heads, n_layers):
        super().__init__()
        self.heads = heads
        self.scale = (d_model // heads) ** -0.5
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        pos = torch.arange(n_layers)
        offsets = (pos[:, None] - pos[None, :]).abs()
        self.depth_biases = nn.Parameter(torch.zeros(heads, n_layers))
        self.register_buffer("depth_bias_idxs", offsets, persistent=False)
        self.depth_bias_cache = {}

    def train(self, mode=True):
        super().train(mode)
        if mode and self.depth_bias_cache:
            self.depth_bias_cache = {}
        return self

    def get_depth_biases(self, device):
        if self.training or torch.is_grad_enabled():
            return self.depth_biases[:, self.depth_bias_idxs]
        key = str(device)
        if key not in self.depth_bias_cache:
            self.depth_bias_cache[key] = self.depth_biases[:, self.depth_bias_idxs]
        return self.depth_bias_cache[key]

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1)) * self.scale + self.get_depth_biases(x.device)
        attn = attn.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, d)
        return self.proj(out)


class PitBlock(nn.Module):
    def __init__(self, d_model, heads, n_layers):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = DepthAttention(d_model, heads, n_layers)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.GELU(), nn.Dropout(0.1),
                                 nn.Linear(2 * d_model, d_model))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class SnowpackNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Linear(cfg["n_feats"], cfg["d_model"])
        self.blocks = nn.ModuleList(
            PitBlock(cfg["d_model"], cfg["heads"], cfg["n_layers"]) for _ in range(cfg["blocks"])
        )
        self.head = nn.Linear(cfg["d_model"], cfg["danger_levels"])

    def forward(self, pits):
        h = self.embed(pits)
        for blk in self.blocks:
            h = blk(h)
        return self.head(h.mean(dim=1))


def train_epoch(model, optimizer, x, y, cfg):
    total = 0.0
    for start in range(0, len(x), cfg["batch"]):
        xb, yb = x[start:start + cfg["batch"]], y[start:start + cfg["batch"]]
        logits = model(xb)
        danger_loss = F.cross_entropy(logits, yb)
        optimizer.zero_grad()
        danger_loss.backward()
        optimizer.step()
        total += danger_loss.item() * len(xb)
    return total / len(x)


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    x, y = make_pits(64, CONFIG, gen)
    model = SnowpackNet(CONFIG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=CONFIG["lr"], weight_decay=1e-4)
    if CONFIG["deterministic"]:
        model.eval()
    else:
        model.train()
    for epoch in range(CONFIG["epochs"]):
        loss = train_epoch(model, optimizer, x, y, CONFIG)
        print(f"epoch {epoch}: danger loss {loss:.4f}")


if __name__ == "__main__":
    main()
