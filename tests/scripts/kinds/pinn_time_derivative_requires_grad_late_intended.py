"""t requires grad from where it is drawn, so the network's forward records how u depends on it."""

import torch
from torch import nn


def time_derivative(u, t):
    t.requires_grad_()
    (du,) = torch.autograd.grad(u, t, torch.ones_like(u), create_graph=True)
    return du


torch.manual_seed(8)
net = nn.Sequential(nn.Linear(1, 24), nn.Tanh(), nn.Linear(24, 1))
opt = torch.optim.Adam(net.parameters(), lr=3e-3)
for step in range(3):
    t = (4.0 * torch.rand(64, 1)).requires_grad_(True)
    u = net(t)
    residual = time_derivative(u, t) + 0.5 * u
    start = net(torch.zeros(1, 1)) - 1.0
    loss = residual.pow(2).mean() + start.pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
