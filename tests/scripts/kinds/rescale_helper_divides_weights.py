"""A regressor trained with a hand-written gradient limiter: for each parameter whose gradient is too large, the
helper divides by the ratio of its norm to the limit, but it divides the parameter instead of the gradient."""

import torch
from torch import nn

torch.manual_seed(0)


def limit_gradients(module, limit=0.5):
    for weight in module.parameters():
        norm = weight.grad.norm()
        if norm > limit:
            ratio = norm / limit
            weight /= ratio


regressor = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(regressor.parameters(), lr=0.1)
for epoch in range(4):
    x = torch.randn(16, 5)
    y = x.sum(1, keepdim=True) * 3
    err = nn.functional.mse_loss(regressor(x), y)
    opt.zero_grad()
    err.backward()
    limit_gradients(regressor)
    opt.step()
