"""A feature matcher (an object, no module) keeps one adapter per stage of the network it trains; each stage's
matching loss is backwarded as the stages run, and one step follows."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(8)
stages = nn.ModuleList(nn.Sequential(nn.Linear(6, 6), nn.GELU()) for _ in range(3))


class StageMatcher:
    def __init__(self, stages: nn.ModuleList) -> None:
        self.stages = stages
        self.adapters = nn.ModuleList(nn.Linear(6, 6) for _ in stages)
        self.opt = torch.optim.Adam([*stages.parameters(), *self.adapters.parameters()], lr=1e-3)

    def update(self, x: torch.Tensor, targets: list[torch.Tensor]) -> None:
        self.opt.zero_grad()
        h = x
        for k, stage in enumerate(self.stages):
            h = stage(h)
            match = F.mse_loss(self.adapters[k](h), targets[k])
            match.backward()
        self.opt.step()


matcher = StageMatcher(stages)
for _ in range(3):
    matcher.update(torch.randn(10, 6), [torch.randn(10, 6) for _ in range(3)])
