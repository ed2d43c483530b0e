"""An in-place error inside torch.func.grad: torch's own error, as without gradlab (gradlab does not watch there)."""

import torch
from torch.func import grad


def f(x):
    y = torch.sigmoid(x)
    y.mul_(2)  # sigmoid saved its output
    return y.sum()


print(grad(f)(torch.randn(3)))
