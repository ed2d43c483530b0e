"""Reduced from https://github.com/pytorch/pytorch/issues/90158

The author trained a network u(x, t) on collocation points and built the times as
`t = 1 + 3 * torch.rand(20, 1, requires_grad=True)` (then `t.requires_grad_()`), once, before training.
The first `loss.backward()` worked; the second raised "Trying to backward through the graph a second
time". With `t = torch.rand(20, 1, requires_grad=True)` it worked. The answer: `1 + 3 * rand(...)` is not
a leaf but the output of a small graph hanging off the rand leaf; every backward goes through it and the
first frees it. The points only need to be a leaf that requires grad (for the derivatives u_t, u_xx),
e.g. `(1 + 3 * torch.rand(20, 1)).requires_grad_()`.

Here the same points in a physics-informed network for the heat equation u_t = ALPHA * u_xx on
x in [-1, 1], t in [1, 4], with the residual taken by torch.autograd.grad, an initial-condition and a
boundary loss, trained by a small trainer class.
"""
import math

import torch
from torch import nn

torch.manual_seed(0)

ALPHA = 0.1
N_COLLOCATION = 64


class Net(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.stack = nn.Sequential(
            nn.Linear(2, hidden), nn.Tanh(),
            nn.Linear(hidden, hidden), nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x, t):
        X = torch.cat([t, x], axis=1)
        return self.stack(X)


def exact(x, t):
    return torch.exp(-ALPHA * math.pi ** 2 * (t - 1)) * torch.sin(math.pi * x)


def heat_residual(net, x, t):
    u = net(x, t)
    ones = torch.ones_like(u)
    u_t = torch.autograd.grad(u, t, ones, create_graph=True)[0]
    u_x = torch.autograd.grad(u, x, ones, create_graph=True)[0]
    u_xx = torch.autograd.grad(u_x, x, torch.ones_like(u_x), create_graph=True)[0]
    return u_t - ALPHA * u_xx


class PINNTrainer:
    def __init__(self, net, lr=1e-3):
        self.net = net
        self.opt = torch.optim.Adam(net.parameters(), lr=lr)
        # collocation points in the interior
        self.x = torch.FloatTensor(N_COLLOCATION, 1).uniform_(-1, 1)
        self.x.requires_grad_()
        self.t = (1 + 3 * torch.rand(N_COLLOCATION, 1)).requires_grad_()
        # initial condition at t = 1 and boundaries x = -1, 1
        self.x0 = torch.linspace(-1, 1, 32).unsqueeze(1)
        self.t0 = torch.ones_like(self.x0)
        self.tb = 1 + 3 * torch.rand(32, 1)
        self.xb = torch.where(torch.rand(32, 1) < 0.5, -1.0, 1.0)

    def step(self):
        residual = heat_residual(self.net, self.x, self.t)
        pde_loss = residual.pow(2).mean()
        ic_loss = (self.net(self.x0, self.t0) - exact(self.x0, self.t0)).pow(2).mean()
        bc_loss = self.net(self.xb, self.tb).pow(2).mean()
        loss = pde_loss + ic_loss + bc_loss
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()

    def train(self, iterations):
        for it in range(iterations):
            loss = self.step()
            if it % 10 == 0:
                print(f"iter {it}: loss {loss:.5f}")


trainer = PINNTrainer(Net())
trainer.train(30)
