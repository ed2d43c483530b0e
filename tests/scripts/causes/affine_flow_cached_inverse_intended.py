"""A learned affine bijection fitted by maximum likelihood with torch's own transforms. The flow is built once,
by a helper, with cache_size=1, and the training set is the same tensor at every step: from the second step on,
the transform hands back the x it inverted at the first step (its graph freed by the first backward) instead of
computing it from the parameters as they are now. No object here has a clear_cache(): the cache is not asked for.
"""

import torch
from torch.distributions import AffineTransform, Independent, Normal, TransformedDistribution


class Standardiser(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.shift = torch.nn.Parameter(torch.zeros(dim))
        self.scale = torch.nn.Parameter(torch.ones(dim))


def make_flow(layer, dim):
    base = Independent(Normal(torch.zeros(dim), torch.ones(dim)), 1)
    bijection = AffineTransform(loc=layer.shift, scale=layer.scale, event_dim=1)
    return TransformedDistribution(base, [bijection])


def fit(samples, steps=6):
    standardiser = Standardiser(samples.shape[1])
    flow = make_flow(standardiser, samples.shape[1])
    opt = torch.optim.Adam(standardiser.parameters(), lr=0.05)
    for step in range(steps):
        nll = -flow.log_prob(samples).mean()
        opt.zero_grad()
        nll.backward()
        opt.step()
    return list(standardiser.parameters())


torch.manual_seed(5)
table = torch.randn(64, 3) * 2.0 + 1.0
print([round(p.sum().item(), 5) for p in fit(table)])
