"""A regression loop that logs the gradient norm before the update: it takes the gradients with torch.autograd.grad
(which frees the graph and writes no .grad), then calls backward on the same loss for the optimizer."""

import torch
from torch import nn


def grad_norm(loss, params):
    grads = torch.autograd.grad(loss, params)
    return torch.sqrt(sum(g.pow(2).sum() for g in grads)).item()


torch.manual_seed(9)
model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
norms = []
for step in range(3):
    x, y = torch.randn(32, 5), torch.randn(32, 1)
    loss = (model(x) - y).pow(2).mean()
    norms.append(grad_norm(loss, list(model.parameters())))
    opt.zero_grad()
    loss.backward()
    opt.step()
