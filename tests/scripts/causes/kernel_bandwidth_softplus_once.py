"""A kernel smoother learns one bandwidth per input feature, kept positive by a softplus; the softplus is taken
once, in the constructor, and both the weights and the bias term read the result."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(4)


class KernelSmoother(nn.Module):
    def __init__(self, features: int, anchors: int) -> None:
        super().__init__()
        self.anchors = nn.Parameter(torch.randn(anchors, features))
        self.values = nn.Parameter(torch.zeros(anchors))
        self.bandwidth = F.softplus(nn.Parameter(torch.zeros(features)))

    def weights(self, x: torch.Tensor) -> torch.Tensor:
        gap = (x[:, None, :] - self.anchors[None]) / self.bandwidth
        return torch.softmax(-(gap**2).sum(-1), dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weights(x) @ self.values + 0.1 * self.bandwidth.log().sum()


smoother = KernelSmoother(3, 10)
optimiser = torch.optim.Adam(smoother.parameters(), lr=0.05)
for _ in range(4):
    x, y = torch.randn(40, 3), torch.randn(40)
    loss = F.mse_loss(smoother(x), y)
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
