"""A forward computed once, before the loop, and reused by every step."""

import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
x, y = torch.randn(16, 4), torch.randn(16, 1)

pred = net(x)
for epoch in range(3):
    loss = (pred - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
