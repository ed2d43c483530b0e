"""A pairwise ranking loss written as a module whose forward returns the loss of each pair and the margins; a
trainer object calls it, backwards the loss and logs it."""

import torch
import torch.nn.functional as F
from torch import nn


class PairRankLoss(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, pos_scores, neg_scores):
        margins = pos_scores - neg_scores
        per_pair = F.softplus(-self.scale * margins)
        return per_pair.mean(), margins.detach()


class Trainer:
    def __init__(self, scorer, lr=1e-2):
        self.scorer = scorer
        self.criterion = PairRankLoss(2.0)
        self.opt = torch.optim.SGD(scorer.parameters(), lr=lr)

    def step(self, pos, neg):
        loss, margins = self.criterion(self.scorer(pos).squeeze(-1), self.scorer(neg).squeeze(-1))
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item(), (margins > 0).float().mean().item()


torch.manual_seed(12)
trainer = Trainer(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
for it in range(3):
    print(trainer.step(torch.randn(6, 4) + 0.5, torch.randn(6, 4)))
