"""A layer can be masked for sparsity: apply_mask() computes the masked weights once and keeps them in a dict; the
forward reads the dict whenever it is set. The loop masks once, then trains: the dict's entries keep the first
step's graph, freed by its backward."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(83)


class Sparse(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 6) * 0.3)
        self.masked = None

    def apply_mask(self, keep: float) -> None:
        cut = self.weight.abs().flatten().kthvalue(int(self.weight.numel() * (1 - keep))).values
        self.masked = {"weight": self.weight * (self.weight.abs() > cut)}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.masked is not None:
            return x @ self.masked["weight"].T
        return x @ self.weight.T


layer = Sparse()
opt = torch.optim.SGD(layer.parameters(), lr=0.1)
layer.apply_mask(0.5)
for _ in range(3):
    x, y = torch.randn(8, 6), torch.randn(8, 4)
    loss = F.mse_loss(layer(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
