"""Choir pitch tracking with a hand-written Batch Renormalization layer.

Source: https://discuss.pytorch.org/t/checkpoint-with-batchnorm-running-averages/17738
The forum thread is about BatchNorm's running mean/variance when the layer's
forward runs more than once per step; the author writes his own BatchNorm
subclass that keeps copies of the running statistics (prev_running_mean,
prev_running_var) and restores or updates them by hand. This script reduces
that to a frame-level pitch tracker for a-cappella choir recordings whose
normalisation layer is a hand-written Batch Renormalization (Ioffe 2017): the
running statistics are kept on the layer, refreshed from every training batch,
and enter the training forward through the correction factors r and d.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

SETTINGS = dict(
    n_bins=48,          # constant-Q bins per frame
    context=5,          # frames of context stacked per example
    n_pitches=25,       # two octaves of semitones around the section's range
    hidden=64,
    batch=32,
    iterations=5,
    lr=2e-3,
    momentum=0.1,
    r_max=3.0,
    d_max=5.0,
)


class BatchRenorm1d(nn.Module):
    def __init__(self, features, momentum, r_max, d_max, eps=1e-5):
        super().__init__()
        self.momentum = momentum
        self.r_max = r_max
        self.d_max = d_max
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_std", torch.ones(features))

    def forward(self, x):
        if not self.training:
            x_hat = (x - self.running_mean) / self.running_std
            return self.weight * x_hat + self.bias
        batch_mean = x.mean(0)
        batch_std = (x.var(0, unbiased=False) + self.eps).sqrt()
        r = (batch_std / self.running_std).clamp(1.0 / self.r_max, self.r_max)
        d = ((batch_mean - self.running_mean) / self.running_std).clamp(-self.d_max, self.d_max)
        x_hat = (x - batch_mean) / batch_std * r + d
        self.running_mean = self.running_mean + self.momentum * (batch_mean - self.running_mean)
        self.running_std = self.running_std + self.momentum * (batch_std - self.running_std)
        return self.weight * x_hat + self.bias


class PitchTracker(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        in_dim = cfg["n_bins"] * cfg["context"]
        self.proj = nn.Linear(in_dim, cfg["hidden"])
        self.norm = BatchRenorm1d(cfg["hidden"], cfg["momentum"], cfg["r_max"], cfg["d_max"])
        self.mid = nn.Linear(cfg["hidden"], cfg["hidden"])
        self.out = nn.Linear(cfg["hidden"], cfg["n_pitches"])

    def forward(self, frames):
        h = F.relu(self.norm(self.proj(frames.flatten(1))))
        return self.out(F.relu(self.mid(h)))


def render_cqt_frames(cfg):
    pitches = torch.randint(0, cfg["n_pitches"], (cfg["batch"],))
    bins = torch.arange(cfg["n_bins"]).float()
    centre = (pitches.float() * 1.5 + 6.0).unsqueeze(1)
    harmonic = torch.exp(-0.5 * (bins - centre) ** 2) + 0.5 * torch.exp(-0.5 * (bins - centre - 18.0) ** 2)
    frames = harmonic.unsqueeze(1).repeat(1, cfg["context"], 1)
    frames = frames + 0.2 * torch.randn(cfg["batch"], cfg["context"], cfg["n_bins"])
    return frames, pitches


def run(cfg):
    tracker = PitchTracker(cfg)
    opt = torch.optim.AdamW(tracker.parameters(), lr=cfg["lr"], weight_decay=1e-4)
    tracker.train()
    for it in range(cfg["iterations"]):
        frames, pitches = render_cqt_frames(cfg)
        logits = tracker(frames)
        pitch_loss = F.cross_entropy(logits, pitches, label_smoothing=0.05)
        opt.zero_grad()
        pitch_loss.backward()
        opt.step()
        acc = (logits.argmax(1) == pitches).float().mean().item()
        print(f"iter {it}: loss {pitch_loss.item():.4f} frame acc {acc:.2f}")


if __name__ == "__main__":
    run(SETTINGS)
