"""torch.func.jacrev and hessian of a small function."""

import torch
from torch.func import hessian, jacrev

torch.manual_seed(0)
w = torch.randn(3, 3)


def f(x):
    return torch.tanh(w @ x).sum() + (x**3).sum()


x = torch.randn(3)
print([round(v, 4) for v in jacrev(f)(x).tolist()])
print([[round(v, 4) for v in row] for row in hessian(f)(x).tolist()])
