"""A pairwise ranker whose forward returns what its loss method computes. The loss method was written when the
scores came from numpy and copies them with ``torch.as_tensor(..., dtype=torch.float32)``: the copy has no graph,
two calls below the training loop's ``loss = ranker(...)``.
"""

import torch
from torch import nn


class PairRanker(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.score = nn.Sequential(nn.Linear(dim, 8), nn.ReLU(), nn.Linear(8, 1))

    def _hinge(self, good, bad):
        good = good.to(dtype=torch.float32)
        bad = bad.to(dtype=torch.float32)
        return torch.relu(1.0 - good + bad).mean()

    def forward(self, preferred, other):
        good = self.score(preferred).squeeze(-1)
        bad = self.score(other).squeeze(-1)
        return self._hinge(good, bad)


def train(steps=3):
    torch.manual_seed(13)
    ranker = PairRanker(4)
    opt = torch.optim.SGD(ranker.parameters(), lr=0.1)
    for _ in range(steps):
        a, b = torch.randn(16, 4) + 0.5, torch.randn(16, 4)
        loss = ranker(a, b)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return ranker


print(f"{train().score[0].weight.sum().item():.6f}")
