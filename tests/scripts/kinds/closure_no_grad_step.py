"""A custom optimizer whose step, decorated with @torch.no_grad(), calls the training closure (a framework's loop)."""

import torch
from torch import nn


class PlainSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])
        return loss


torch.manual_seed(43)
model = nn.Linear(5, 2)
optimizer = PlainSGD(model.parameters())
x, y = torch.randn(8, 5), torch.randint(0, 2, (8,))
for _ in range(3):

    def closure():
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        return loss

    optimizer.step(closure)
