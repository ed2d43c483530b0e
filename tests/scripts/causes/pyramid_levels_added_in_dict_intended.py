"""A two-level feature pyramid over 1-D signals keeps its levels in a dict; the top-down path adds the upsampled
coarse level into the fine one, whose values came out of a ReLU."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(9)


class Pyramid(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fine = nn.Sequential(nn.Conv1d(2, 8, 3, padding=1), nn.ReLU())
        self.coarse = nn.Sequential(nn.Conv1d(8, 8, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Conv1d(8, 1, 1)

    def forward(self, signal: torch.Tensor) -> torch.Tensor:
        levels = {"fine": self.fine(signal)}
        levels["coarse"] = self.coarse(levels["fine"])
        levels["fine"] = levels["fine"] + F.interpolate(levels["coarse"], size=signal.shape[-1])
        return self.head(levels["fine"]).squeeze(1)


pyramid = Pyramid()
adam = torch.optim.Adam(pyramid.parameters(), lr=3e-3)
for _ in range(4):
    signal, target = torch.randn(6, 2, 20), torch.randn(6, 20)
    fit = F.mse_loss(pyramid(signal), target)
    adam.zero_grad()
    fit.backward()
    adam.step()
