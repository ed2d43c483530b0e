"""A tagger whose feature method returns a tuple; the forward gates two channels of its first item in place,
reading those channels on the right of the same assignment."""

import torch
from torch import nn

torch.manual_seed(5)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(5, 8)
        self.gain = nn.Parameter(torch.full((8,), 0.5))
        self.head = nn.Linear(8, 3)

    def features(self, x):
        h = self.enc(x)
        return h, h.sum(1)

    def forward(self, x):
        feats = self.features(x)
        for c in (1, 4):
            feats[0][:, c] = feats[0][:, c] * self.gain[c] + 1.0
        return self.head(feats[0]) + feats[1].unsqueeze(1)


def fit(tagger, steps):
    opt = torch.optim.SGD(tagger.parameters(), lr=0.05)
    for _ in range(steps):
        x, y = torch.randn(12, 5), torch.randint(0, 3, (12,))
        loss = nn.functional.cross_entropy(tagger(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


fit(Tagger(), 3)
