"""Density estimation of sensor readings with a learned affine flow. The learned affine transform's call is written
over two lines, with cache_size=1; a fixed log-normal reference distribution for the report uses
ExpTransform(cache_size=1) on one line. The data tensor is the same at every step, so from the second step on the
affine transform hands back the first step's x, whose graph the first backward freed."""

import torch
from torch import nn
from torch.distributions import AffineTransform, ExpTransform, Independent, Normal, TransformedDistribution


class Params(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.shift = nn.Parameter(torch.zeros(dim))
        self.scale = nn.Parameter(torch.ones(dim))


torch.manual_seed(3)
readings = torch.randn(256, 2) * 0.7 + 1.5
reference = TransformedDistribution(Normal(torch.zeros(2), torch.ones(2)), [ExpTransform(cache_size=1)])
params = Params(2)
base = Independent(Normal(torch.zeros(2), torch.ones(2)), 1)
affine = AffineTransform(loc=params.shift, scale=params.scale, event_dim=1, cache_size=1)
flow = TransformedDistribution(base, [affine])
opt = torch.optim.Adam(params.parameters(), lr=0.05)
for _step in range(6):
    nll = -flow.log_prob(readings).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
print([round(p.sum().item(), 5) for p in params.parameters()], reference.sample().shape)
