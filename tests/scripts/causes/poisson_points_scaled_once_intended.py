"""A 1-D Poisson solver whose interior points are scaled once, in the constructor, from a tensor made with
requires_grad=True: every iteration's residual backwards through that small graph again."""

import torch
from torch import nn


def second_derivative(f, z):
    dz = torch.autograd.grad(f.sum(), z, create_graph=True)[0]
    return torch.autograd.grad(dz.sum(), z, create_graph=True)[0]


class Poisson:
    def __init__(self, model):
        self.model = model
        self.optim = torch.optim.SGD(model.parameters(), lr=1e-2)
        self.z = (2 * torch.rand(24, 1) - 1).requires_grad_()

    def fit_once(self):
        u = self.model(self.z)
        res = second_derivative(u, self.z) + torch.sin(3.0 * self.z)
        loss = res.pow(2).mean() + self.model(torch.zeros(1, 1)).pow(2).sum()
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()


torch.manual_seed(5)
solver = Poisson(nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1)))
for _ in range(3):
    solver.fit_once()
