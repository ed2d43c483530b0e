"""Robust regression with a running error scale: a small module keeps a momentum average of the absolute error,
adds a share of the squared error, and divides the error by it before the loss."""

import torch
from torch import nn


class RunningScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(())

    def forward(self, err):
        self.scale = 0.9 * self.scale + 0.1 * err.abs().mean()
        self.scale = self.scale + 0.01 * err.pow(2).mean()
        return err / self.scale


torch.manual_seed(14)
reg = nn.Sequential(nn.Linear(5, 10), nn.ReLU(), nn.Linear(10, 1))
normaliser = RunningScale()
opt = torch.optim.Adam(reg.parameters(), lr=1e-2)
xs, ys = torch.randn(40, 5), torch.randn(40, 1)
for it in range(4):
    scaled = normaliser(reg(xs) - ys)
    huber = nn.functional.smooth_l1_loss(scaled, torch.zeros_like(scaled))
    opt.zero_grad()
    huber.backward()
    opt.step()
