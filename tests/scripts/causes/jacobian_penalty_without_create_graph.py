"""A regressor smoothed by a Jacobian-norm penalty: a helper takes the gradient of the outputs with respect to the
inputs, and the training loss adds its norm."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def jacobian_norm(outputs, inputs):
    return torch.autograd.grad(outputs.sum(), inputs)[0].norm(dim=1).mean()


def run(reg, steps=3):
    opt = torch.optim.Adam(reg.parameters(), lr=1e-2)
    for _ in range(steps):
        x = torch.randn(16, 4, requires_grad=True)
        y = x[:, :1].detach() ** 2
        pred = reg(x)
        smooth = jacobian_norm(pred, x)
        total = F.mse_loss(pred, y) + 0.1 * smooth
        opt.zero_grad()
        total.backward()
        opt.step()


run(nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1)))
