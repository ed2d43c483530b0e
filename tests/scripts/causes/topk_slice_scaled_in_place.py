"""A spectral pooling layer keeps the leading eigenvectors of a learned symmetric matrix, scaled by the square roots
of their eigenvalues, and projects the input on them."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(12)


class SpectralPool(nn.Module):
    def __init__(self, dim: int, keep: int) -> None:
        super().__init__()
        self.mix = nn.Parameter(torch.randn(dim, dim) / dim**0.5)
        self.keep = keep

    def basis(self) -> torch.Tensor:
        vals, vecs = torch.linalg.eigh(self.mix @ self.mix.T + torch.eye(self.mix.shape[0]))
        vecs = vecs[:, -self.keep :]
        vecs *= vals[-self.keep :].sqrt()
        return vecs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.basis()


pool = SpectralPool(6, 3)
head = nn.Linear(3, 1)
opt = torch.optim.SGD([*pool.parameters(), *head.parameters()], lr=0.01)
for _ in range(3):
    x, y = torch.randn(16, 6), torch.randn(16, 1)
    fit = F.mse_loss(head(pool(x)), y)
    opt.zero_grad()
    fit.backward()
    opt.step()
