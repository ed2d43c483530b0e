"""The intended training of penalty_as_cached_property.py: the penalty computed at every read.

A smoothness penalty on a learned curve, kept as a functools.cached_property of the objective object: the first
read computes it, every later read returns that tensor, whose graph the first backward freed."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Curve(nn.Module):
    def __init__(self):
        super().__init__()
        self.points = nn.Parameter(torch.randn(12))

    def forward(self):
        return torch.tanh(self.points)


class Objective:
    def __init__(self, curve):
        self.curve = curve

    @property
    def roughness(self):
        c = self.curve()
        return 0.3 * (c[1:] - c[:-1]).pow(2).sum()


curve = Curve()
readout = nn.Linear(12, 1)
objective = Objective(curve)
opt = torch.optim.Adam(list(curve.parameters()) + list(readout.parameters()), lr=0.01)
target = torch.randn(1)
for step in range(3):
    fit = F.mse_loss(readout(curve()), target)
    loss = fit + objective.roughness
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 4))
