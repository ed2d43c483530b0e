"""Leaky integrator units keep their potential between calls and write the last trace into a log dict; reset()
clears the potential. The training loop never calls reset(), so each batch integrates onto the previous batch's
potential and its freed graph."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(103)


class Leaky(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.inp = nn.Linear(width, width)
        self.u = None
        self.log = {}

    def reset(self) -> None:
        self.u = None

    def forward(self, xs: torch.Tensor) -> torch.Tensor:
        if self.u is None:
            self.u = torch.zeros(xs.shape[0], xs.shape[2])
        trace = []
        for t in range(xs.shape[1]):
            self.u = 0.8 * self.u + self.inp(xs[:, t])
            trace.append(self.u)
        self.log["u"] = torch.stack(trace, 1)
        return torch.tanh(self.u)


units = Leaky(5)
head = nn.Linear(5, 2)
opt = torch.optim.Adam([*units.parameters(), *head.parameters()], lr=1e-2)
for _ in range(3):
    xs, y = torch.randn(6, 4, 5), torch.randint(0, 2, (6,))
    loss = F.cross_entropy(head(units(xs)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
