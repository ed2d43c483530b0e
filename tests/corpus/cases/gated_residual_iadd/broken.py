"""A stack of gated residual blocks (GLU-style gate) for tabular regression."""

import torch
import torch.nn as nn


class GatedResidualBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.value = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.norm(x)
        x += torch.sigmoid(self.gate(h)) * self.value(h)
        return x


class Net(nn.Module):
    def __init__(self, d_in=10, dim=24, depth=3):
        super().__init__()
        self.inp = nn.Linear(d_in, dim)
        self.blocks = nn.ModuleList([GatedResidualBlock(dim) for _ in range(depth)])
        self.out = nn.Linear(dim, 1)

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = block(x)
        return self.out(x)


if __name__ == "__main__":
    torch.manual_seed(14)
    regressor = Net()
    opt = torch.optim.AdamW(regressor.parameters(), lr=1e-3)
    X = torch.randn(60, 10)
    y = (X[:, :2] ** 2).sum(1, keepdim=True)
    for epoch in range(3):
        for i in range(0, 60, 20):
            pred = regressor(X[i : i + 20])
            mse = torch.mean((pred - y[i : i + 20]) ** 2)
            opt.zero_grad()
            mse.backward()
            opt.step()
        print(epoch, mse.item())
