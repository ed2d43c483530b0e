"""A first-order meta-learner for sensor calibration: the inner step differentiates by the values of a dict of the
model's named parameters, and the model keeps a drift term its functional forward leaves out."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

torch.manual_seed(0)


class Calibrator(nn.Module):
    def __init__(self):
        super().__init__()
        self.gain = nn.Linear(4, 6)
        self.head = nn.Linear(6, 1)
        self.drift = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return self.head(torch.tanh(self.gain(x))).squeeze(-1)


model = Calibrator()
meta_opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for task in range(3):
    xs, ys = torch.randn(10, 4), torch.randn(10)
    xq, yq = torch.randn(10, 4), torch.randn(10)
    fast = dict(model.named_parameters())
    inner = F.mse_loss(functional_call(model, fast, (xs,)), ys)
    grads = torch.autograd.grad(inner, list(fast.values()), create_graph=True, allow_unused=True)
    fast = {name: p if g is None else p - 0.05 * g for (name, p), g in zip(fast.items(), grads)}
    outer = F.mse_loss(functional_call(model, fast, (xq,)), yq)
    meta_opt.zero_grad()
    outer.backward()
    meta_opt.step()
    print(task, round(outer.item(), 4))
