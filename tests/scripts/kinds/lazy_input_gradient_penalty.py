"""A classifier with a lazy input-gradient penalty (every other step, backwarded on its own): the helper that takes
the gradient of the logits with respect to the input does not keep its graph, so the penalty has none."""

import torch
from torch import nn
from torch.nn import functional as F


def input_gradient(out, x):
    (g,) = torch.autograd.grad(out.logsumexp(1).sum(), [x])
    return g


torch.manual_seed(12)
clf = nn.Sequential(nn.Linear(10, 32), nn.Softplus(), nn.Linear(32, 4))
opt = torch.optim.SGD(clf.parameters(), lr=0.05, momentum=0.9)
for step in range(4):
    x = torch.randn(16, 10)
    y = torch.randint(0, 4, (16,))
    ce = F.cross_entropy(clf(x), y)
    opt.zero_grad()
    ce.backward()
    if step % 2 == 1:
        xr = x.clone().requires_grad_(True)
        penalty = 0.1 * input_gradient(clf(xr), xr).pow(2).sum(1).mean()
        penalty.backward()
    opt.step()
