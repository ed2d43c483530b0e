"""A discrete bottleneck with a straight-through estimator, whose running code-usage statistics are updated in
training mode; the bottleneck is put in eval mode to freeze those statistics while the encoder is fine-tuned."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Bottleneck(nn.Module):
    def __init__(self, codes=6, dim=4, track_usage=True):
        super().__init__()
        self.codebook = nn.Parameter(torch.randn(codes, dim), requires_grad=False)
        self.register_buffer("usage", torch.zeros(codes))
        self.track_usage = track_usage

    def forward(self, z):
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
for step in range(3):
    x, target = torch.randn(16, 8), torch.randn(16, 1)
    codes = bottleneck(encoder(x))
    mse = F.mse_loss(head(codes), target)
    opt.zero_grad()
    mse.backward()
    opt.step()
