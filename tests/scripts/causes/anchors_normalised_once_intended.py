"""A kernel smoother scores inputs against learned anchor directions, normalised to unit length; the normalisation
is taken once, in the constructor, and both the weights and a spread penalty read the result."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(4)


class KernelSmoother(nn.Module):
    def __init__(self, features: int, anchors: int) -> None:
        super().__init__()
        self.anchors = nn.Parameter(torch.randn(anchors, features))
        self.values = nn.Parameter(torch.zeros(anchors))

    def weights(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(4.0 * F.normalize(x, dim=1) @ F.normalize(self.anchors, dim=1).t(), dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spread = (F.normalize(self.anchors, dim=1) @ F.normalize(self.anchors, dim=1).t()).pow(2).mean()
        return self.weights(x) @ self.values + 0.1 * spread


smoother = KernelSmoother(3, 10)
optimiser = torch.optim.Adam(smoother.parameters(), lr=0.05)
for _ in range(4):
    x, y = torch.randn(40, 3), torch.randn(40)
    loss = F.mse_loss(smoother(x), y)
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
