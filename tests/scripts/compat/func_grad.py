"""torch.func.grad and functional_call: the gradient of a loss with respect to a dict of parameters."""

import torch
from torch.func import functional_call, grad

torch.manual_seed(0)
model = torch.nn.Linear(3, 2)
params = {k: v.detach() for k, v in model.named_parameters()}
x, y = torch.randn(4, 3), torch.randn(4, 2)


def loss_fn(p, x, y):
    return torch.nn.functional.mse_loss(functional_call(model, p, (x,)), y)


g = grad(loss_fn)(params, x, y)
print({k: [round(v, 4) for v in t.flatten().tolist()] for k, t in g.items()})
