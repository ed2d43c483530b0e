"""A gated block whose projection is chunked into a value and a gate, the value passed through an activation
module constructed with inplace=True."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class GatedBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, 2 * width)
        self.act = nn.LeakyReLU(0.1)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        value, gate = self.proj(x).chunk(2, dim=-1)
        return x + self.out(self.act(value) * torch.sigmoid(gate))


net = nn.Sequential(GatedBlock(8), GatedBlock(8), nn.Linear(8, 1))
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(3):
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    loss = F.mse_loss(net(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
