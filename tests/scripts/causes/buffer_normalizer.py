"""A value head behind a normalizer that tracks the running peak of its input in a buffer."""

import torch
from torch import nn


class PeakNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("peak", torch.ones(n))
        self.lin = nn.Linear(n, 1)

    def forward(self, h):
        scaled = h / self.peak
        with torch.no_grad():
            self.peak.copy_(torch.maximum(self.peak, h.abs().amax(0)))
        return self.lin(scaled)


torch.manual_seed(4)
critic = nn.Sequential(nn.Linear(3, 10), nn.ReLU(), PeakNorm(10))
sgd = torch.optim.SGD(critic.parameters(), lr=0.05)
obs, returns = torch.randn(24, 3), torch.randn(24, 1)
for start in (0, 8, 16):
    value_loss = (critic(obs[start : start + 8]) - returns[start : start + 8]).abs().mean()
    sgd.zero_grad()
    value_loss.backward()
    sgd.step()
