"""Sensitivity-regularised regression: the gradient of the predictions with respect to the inputs is taken in the
training loop itself, and its mean magnitude is added to the loss."""

import torch
from torch import nn

torch.manual_seed(0)

reg = nn.Sequential(nn.Linear(3, 12), nn.Tanh(), nn.Linear(12, 1))
opt = torch.optim.SGD(reg.parameters(), lr=0.05)
for step in range(3):
    x = torch.randn(20, 3).requires_grad_()
    pred = reg(x)
    sens = torch.autograd.grad(pred.sum(), x, create_graph=True)[0]
    penalty = sens.abs().mean()
    objective = (pred - x[:, 1:2].detach()).pow(2).mean() + 0.2 * penalty
    opt.zero_grad()
    objective.backward()
    opt.step()
