"""Sequence tagging: an encoder's tanh features are refined position by position by a small residual cell, each
position's refinement written back where it was read."""

import torch
from torch import nn

torch.manual_seed(6)


class Refiner(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, v):
        return v + 0.5 * torch.sigmoid(self.proj(v))


class Tagger(nn.Module):
    def __init__(self, dim=8, width=12, tags=3):
        super().__init__()
        self.encode = nn.Linear(dim, width)
        self.refine = Refiner(width)
        self.emit = nn.Linear(width, tags)

    def forward(self, seq):
        encoded = torch.tanh(self.encode(seq))
        feats = torch.zeros_like(encoded)
        steps = encoded.shape[1]
        pos = 0
        while pos < steps:
            feats[:, pos] = self.refine(encoded[:, pos])
            pos += 1
        return self.emit(feats)


tagger = Tagger()
opt = torch.optim.AdamW(tagger.parameters(), lr=1e-3)
seq, gold = torch.randn(4, 5, 8), torch.randint(0, 3, (4, 5))
for it in range(3):
    scores = tagger(seq)
    nll = nn.functional.cross_entropy(scores.reshape(-1, 3), gold.reshape(-1))
    opt.zero_grad()
    nll.backward()
    opt.step()
