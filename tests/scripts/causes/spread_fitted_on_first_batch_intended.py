"""A standardising layer fits its spread on the first batch it sees and divides every later batch by it.

The spread is a statistic of the hidden features, so it is computed from the first layer's output.
"""

import torch
from torch import nn

torch.manual_seed(5)


class FirstBatchStandardiser(nn.Module):
    def __init__(self, eps: float = 1e-3) -> None:
        super().__init__()
        self.eps = eps
        self.spread = None

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        if self.spread is None:
            self.spread = feats.detach().std(dim=0, keepdim=True) + self.eps
        return feats / self.spread


class Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(10, 24)
        self.standardise = FirstBatchStandardiser()
        self.classify = nn.Linear(24, 4)

    def forward(self, clip: torch.Tensor) -> torch.Tensor:
        return self.classify(torch.relu(self.standardise(self.embed(clip))))


def fit(steps: int = 4) -> None:
    tagger = Tagger()
    adam = torch.optim.Adam(tagger.parameters(), lr=1e-3)
    crit = nn.CrossEntropyLoss()
    for _ in range(steps):
        clips, tags = torch.randn(16, 10), torch.randint(0, 4, (16,))
        adam.zero_grad()
        tag_loss = crit(tagger(clips), tags)
        tag_loss.backward()
        adam.step()


fit()
