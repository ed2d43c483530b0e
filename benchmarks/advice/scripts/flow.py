"""Normalizing flow: RealNVP affine coupling layers fit a two-moons-like density by maximum likelihood."""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)


def two_moons(n):
    t = math.pi * torch.rand(n)
    upper = torch.rand(n) < 0.5
    x = torch.where(upper, torch.cos(t), 1 - torch.cos(t))
    y = torch.where(upper, torch.sin(t), 0.5 - torch.sin(t))
    return torch.stack([x, y], dim=1) + 0.05 * torch.randn(n, 2)


class Coupling(nn.Module):
    """y1 = x1; y2 = x2 * exp(s(x1)) + t(x1), with the roles of the two coordinates set by ``flip``."""

    def __init__(self, flip, hidden=32):
        super().__init__()
        self.flip = flip
        self.net = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def forward(self, x):
        x1, x2 = x[:, :1], x[:, 1:]
        if self.flip:
            x1, x2 = x2, x1
        st = self.net(x1)
        s = torch.tanh(st[:, :1])
        t = st[:, 1:]
        y2 = x2 * torch.exp(s) + t
        y = torch.cat([y2, x1], dim=1) if self.flip else torch.cat([x1, y2], dim=1)
        return y, s.sum(dim=1)


class RealNVP(nn.Module):
    def __init__(self, n_layers=4):
        super().__init__()
        self.layers = nn.ModuleList([Coupling(flip=i % 2 == 1) for i in range(n_layers)])

    def forward(self, x):
        log_det = torch.zeros(x.shape[0])
        for layer in self.layers:
            x, ld = layer(x)
            log_det = log_det + ld
        return x, log_det

    def log_prob(self, x):
        z, log_det = self(x)
        log_base = -0.5 * (z**2).sum(dim=1) - math.log(2 * math.pi)
        return log_base + log_det


def main():
    data = two_moons(256)
    flow = RealNVP()
    optimizer = torch.optim.Adam(flow.parameters(), lr=5e-3)
    for epoch in range(3):
        for x in data.split(64):
            nll = -flow.log_prob(x).mean()
            optimizer.zero_grad()
            nll.backward()
            optimizer.step()
        print(f"epoch {epoch}: nll {nll.item():.3f}")


if __name__ == "__main__":
    main()
