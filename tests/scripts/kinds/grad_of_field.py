"""A physics-informed net: du/dx by autograd.grad of the field itself, which has one value per point."""

import torch
from torch import nn

torch.manual_seed(59)
net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
x = torch.linspace(0, 1, 20).unsqueeze(1).requires_grad_(True)
for _ in range(3):
    u = net(x)
    du = torch.autograd.grad(u, x, create_graph=True)[0]
    loss = (du - torch.cos(x)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
