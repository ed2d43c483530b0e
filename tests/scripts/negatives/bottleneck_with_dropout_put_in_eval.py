"""A negative case of this stop's review: the script a rule was not written for (see tests/test_negatives.py)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Bottleneck(nn.Module):
    def __init__(self, codes=6, dim=4, track_usage=True):
        super().__init__()
        self.pre = nn.Sequential(nn.Linear(dim, dim), nn.Dropout(0.5), nn.BatchNorm1d(dim))
        self.pre.requires_grad_(False)
        self.codebook = nn.Parameter(torch.randn(codes, dim), requires_grad=False)
        self.register_buffer("usage", torch.zeros(codes))
        self.track_usage = track_usage

    def forward(self, z):
        z = self.pre(z)
        idx = torch.cdist(z, self.codebook).argmin(dim=1)
        hard = self.codebook[idx]
        if self.training:
            if self.track_usage:
                with torch.no_grad():
                    self.usage.mul_(0.9).add_(F.one_hot(idx, len(self.codebook)).float().mean(0), alpha=0.1)
            return z + (hard - z).detach()
        return hard


encoder = nn.Linear(8, 4)
head = nn.Linear(4, 1)
head.requires_grad_(False)
bottleneck = Bottleneck()
bottleneck.eval()
opt = torch.optim.SGD(encoder.parameters(), lr=0.05)
for _ in range(3):
    x, target = torch.randn(16, 8), torch.randn(16, 1)
    codes = bottleneck(encoder(x))
    mse = F.mse_loss(head(codes), target)
    opt.zero_grad()
    mse.backward()
    opt.step()
