"""Physics-informed net: u'' = -pi^2 sin(pi x) on [0, 1] with u(0) = u(1) = 0; derivatives by torch.autograd.grad."""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self, hidden=24):
        super().__init__()
        self.l1 = nn.Linear(1, hidden)
        self.l2 = nn.Linear(hidden, hidden)
        self.l3 = nn.Linear(hidden, 1)

    def forward(self, x):
        h = torch.tanh(self.l1(x))
        h = torch.tanh(self.l2(h))
        return self.l3(h)


def residual(net, x):
    u = net(x)
    du = torch.autograd.grad(u.sum(), x, create_graph=True)[0]
    d2u = torch.autograd.grad(du.sum(), x, create_graph=True)[0]
    return d2u + math.pi**2 * torch.sin(math.pi * x)


net = MLP()
optimizer = torch.optim.Adam(net.parameters(), lr=5e-3)
x_col = torch.linspace(0, 1, 32).unsqueeze(1).requires_grad_(True)
x_bc = torch.tensor([[0.0], [1.0]])

for it in range(12):
    optimizer.zero_grad()
    r = residual(net, x_col)
    loss_pde = (r**2).mean()
    loss_bc = (net(x_bc) ** 2).mean()
    loss = loss_pde + 10.0 * loss_bc
    loss.backward()
    optimizer.step()
    if it % 6 == 5:
        print(f"iteration {it}: pde {loss_pde.item():.4f} bc {loss_bc.item():.5f}")
