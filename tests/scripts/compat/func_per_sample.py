"""Per-sample gradients: vmap(grad(...)) over a batch (DP-SGD, influence functions)."""

import torch
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 1))
params = {k: v.detach() for k, v in model.named_parameters()}
x, y = torch.randn(6, 3), torch.randn(6, 1)


def loss_fn(p, xi, yi):
    out = functional_call(model, p, (xi.unsqueeze(0),))
    return ((out - yi) ** 2).mean()


per_sample = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)
print({k: tuple(v.shape) for k, v in per_sample.items()})
print(round(per_sample["0.weight"].norm(dim=(1, 2)).sum().item(), 4))
