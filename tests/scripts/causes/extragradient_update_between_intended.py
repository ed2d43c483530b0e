"""Extragradient on a small regressor: the optimizer's own extrapolate() moves the weights between two backwards
of one prediction, and the second backward reuses that prediction instead of computing it at the moved weights."""

import torch
from torch import nn


class Extragradient(torch.optim.Optimizer):
    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))
        self.anchor = {}

    @torch.no_grad()
    def extrapolate(self):
        for group in self.param_groups:
            for w in group["params"]:
                if w.grad is None:
                    continue
                self.anchor[w] = w.clone()
                w.sub_(group["lr"] * w.grad)
        self.zero_grad()

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for w in group["params"]:
                if w.grad is not None:
                    w.copy_(self.anchor[w] - group["lr"] * w.grad)


def fit(reg, opt, xs, ys, rounds):
    for _ in range(rounds):
        pred = reg(xs)
        mse = ((pred - ys) ** 2).mean()
        mse.backward()
        opt.extrapolate()
        ((reg(xs) - ys) ** 2).mean().backward()
        opt.step()
        opt.zero_grad()


torch.manual_seed(71)
reg = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
opt = Extragradient(reg.parameters(), lr=0.05)
fit(reg, opt, torch.randn(16, 5), torch.randn(16, 1), 3)
