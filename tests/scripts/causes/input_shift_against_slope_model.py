"""Searching an input shift that makes a frozen surrogate's output high where its slope is steep: the surrogate
returns its output and the slope with respect to its input; the shift is a plain tensor given to an optimizer."""

import torch
from torch import nn

torch.manual_seed(12)


class Surrogate(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Linear(3, 16), nn.Softplus(), nn.Linear(16, 1))
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, pts):
        pts = pts.requires_grad_() if not pts.requires_grad else pts
        height = self.f(pts).sum()
        slope = torch.autograd.grad(height, pts)[0]
        return height, slope


surrogate = Surrogate()
base = torch.randn(8, 3)
shift = torch.zeros(8, 3, requires_grad=True)
search = torch.optim.Adam([shift], lr=0.05)
for it in range(4):
    search.zero_grad()
    height, slope = surrogate(base + shift)
    objective = -height - 0.1 * slope.detach().norm()
    search.zero_grad()
    objective.backward()
    search.step()
