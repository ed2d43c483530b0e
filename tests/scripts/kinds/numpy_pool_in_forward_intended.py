"""A multi-scale encoder pools its scales with numpy in its forward: numpy converts each scale's tensor, which
requires grad; the pooled features are part of the computation, so the gradient must flow through them."""

import torch
from torch import nn


class MultiScale(nn.Module):
    def __init__(self, dim, scales):
        super().__init__()
        self.proj = nn.ModuleList(nn.Linear(dim, dim) for _ in range(scales))
        self.out = nn.Linear(dim, 1)

    def forward(self, x):
        per_scale = [torch.tanh(p(x)) for p in self.proj]
        pooled = torch.stack(per_scale).mean(0)
        return self.out(pooled)


def run(encoder, optim, data, epochs):
    for _ in range(epochs):
        for feats, target in data:
            optim.zero_grad()
            err = (encoder(feats) - target).abs().mean()
            err.backward()
            optim.step()


torch.manual_seed(43)
encoder = MultiScale(6, 3)
optim = torch.optim.Adam(encoder.parameters(), lr=1e-2)
data = [(torch.randn(5, 6), torch.randn(5, 1)) for _ in range(2)]
run(encoder, optim, data, 2)
