"""A low-rank kernel layer memoises its Gram matrix on a private attribute and offers refresh() to drop it; the
training loop never calls refresh(), so every batch reuses the first batch's Gram matrix and its graph."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(17)


class LowRankKernel(nn.Module):
    def __init__(self, items: int, rank: int) -> None:
        super().__init__()
        self.factor = nn.Parameter(torch.randn(items, rank) * 0.3)
        self._gram = None

    def refresh(self) -> None:
        self._gram = None

    def gram(self) -> torch.Tensor:
        if self._gram is None:
            self._gram = self.factor @ self.factor.T
        return self._gram

    def forward(self, weights: torch.Tensor) -> torch.Tensor:
        return weights @ self.gram()


kernel = LowRankKernel(7, 3)
readout = nn.Linear(7, 1)
opt = torch.optim.Adam([*kernel.parameters(), *readout.parameters()], lr=1e-2)
for _ in range(3):
    w, y = torch.softmax(torch.randn(10, 7), dim=1), torch.randn(10, 1)
    fit = F.mse_loss(readout(kernel(w)), y)
    opt.zero_grad()
    fit.backward()
    opt.step()
