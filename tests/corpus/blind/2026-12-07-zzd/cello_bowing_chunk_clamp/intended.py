"""Cello bowing technique: predict bow speed and bow pressure, with their uncertainty, from motion-capture frames.

Source: https://github.com/pytorch/pytorch/issues/36403 -- split, split_with_sizes and chunk return
views of their input; the maintainers made them proper views, so a view they return that is then
modified in place raises "Output N of SplitBackward0 is a view and is being modified inplace. This view
is the output of a function that returns multiple views." (The writer's reading: a policy or
regression head chunked into a mean and a log-std whose log-std is then clamped in place is such code.)

Reduction: a frame encoder reads bow-arm marker features (elbow angle, wrist height, bow contact point,
string crossing indicators) and its head emits means and log-stds for bow speed and pressure, chunked
in two; the log-std is clamped in place with ``clamp_`` before a heteroscedastic Gaussian NLL against
the teacher's measured bowing.
"""
import math

import torch
import torch.nn as nn

torch.manual_seed(11)

cfg = {
    "markers": 18,
    "targets": 2,  # bow speed (cm/s), bow pressure (N)
    "frames": 128,
    "batch": 32,
    "epochs": 2,
    "lr": 2e-3,
    "log_std_range": (-4.0, 1.5),
}


def capture_session(n, d, k):
    frames = torch.randn(n, d)
    mix = torch.randn(d, k) / math.sqrt(d)
    bowing = frames @ mix + 0.1 * torch.randn(n, k)
    return frames, bowing


class BowingHead(nn.Module):
    def __init__(self, d, k, log_std_range):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(d, 48), nn.GELU(), nn.Linear(48, 48), nn.GELU())
        self.out = nn.Linear(48, 2 * k)
        self.lo, self.hi = log_std_range

    def forward(self, x):
        mean, log_std = self.out(self.trunk(x)).chunk(2, dim=-1)
        log_std = log_std.clamp(self.lo, self.hi)
        return mean, log_std


def gaussian_nll(mean, log_std, target):
    return (0.5 * ((target - mean) / log_std.exp()) ** 2 + log_std + 0.5 * math.log(2 * math.pi)).mean()


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.opt = torch.optim.RMSprop(model.parameters(), lr=lr)

    def step(self, frames, bowing):
        mean, log_std = self.model(frames)
        bowing_nll = gaussian_nll(mean, log_std, bowing)
        self.opt.zero_grad()
        bowing_nll.backward()
        self.opt.step()
        return bowing_nll.item()


def main():
    frames, bowing = capture_session(cfg["frames"], cfg["markers"], cfg["targets"])
    head = BowingHead(cfg["markers"], cfg["targets"], cfg["log_std_range"])
    trainer = Trainer(head, cfg["lr"])
    for epoch in range(cfg["epochs"]):
        losses = [
            trainer.step(frames[i:i + cfg["batch"]], bowing[i:i + cfg["batch"]])
            for i in range(0, cfg["frames"], cfg["batch"])
        ]
        print(f"epoch {epoch}: nll {sum(losses) / len(losses):.4f}")


if __name__ == "__main__":
    main()
