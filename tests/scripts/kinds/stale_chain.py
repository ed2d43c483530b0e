"""A learned scale turned into a distribution once, before the loop that fits it."""

import torch
from torch import distributions

torch.manual_seed(41)
loc = torch.zeros(2, requires_grad=True)
log_scale = torch.zeros(2, requires_grad=True)
samples = torch.randn(64, 2) * 0.5 + 1.0
adam = torch.optim.Adam([loc, log_scale], lr=0.05)
scale = log_scale.exp()
normal = distributions.Normal(loc, scale)
for _ in range(4):
    adam.zero_grad()
    nll = -normal.log_prob(samples).sum(-1).mean()
    nll.backward()
    adam.step()
