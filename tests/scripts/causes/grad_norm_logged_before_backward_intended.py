"""The gradients for the log are taken with the graph kept, so the backward for the update still finds it."""

import torch
from torch import nn


def grad_norm(loss, params):
    grads = torch.autograd.grad(loss, params, retain_graph=True)
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
