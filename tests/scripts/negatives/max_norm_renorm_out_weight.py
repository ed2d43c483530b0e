"""A classifier with a max-norm constraint on its output layer, applied with torch.renorm(..., out=weight). The
constraint was moved up to sit beside the loss computation, so it now runs between the forward and the backward
and writes into the weight that F.linear saved."""

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.ReLU())
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        return F.linear(self.body(x), self.fc.weight, self.fc.bias)

    @torch.no_grad()
    def max_norm(self, c=1.0):
        torch.renorm(self.fc.weight, 2, 0, c, out=self.fc.weight)


torch.manual_seed(1)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _step in range(4):
    x, y = torch.randn(10, 6), torch.randint(0, 3, (10,))
    loss = F.cross_entropy(net(x), y)
    net.max_norm(0.5)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"{net.fc.weight.norm(dim=1).max().item():.6f}")
