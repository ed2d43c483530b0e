"""Tide prediction: a physics-informed sea-level model with a learnable open-boundary amplitude.

Source: https://github.com/lululxvi/deepxde/issues/1612

The reporter solved an inverse problem in DeepXDE: the unknown constant ``C1`` was not in
the PDE but in a boundary condition, ``dde.icbc.NeumannBC(geom, lambda x: C1 / (2 * D), ...)``,
and ``C1`` was passed as an external trainable variable. Training stopped at the second
iteration with "Trying to backward through the graph a second time". DeepXDE evaluates a
basic BC's function once per set of boundary points and caches the values (the later PR
lululxvi/deepxde#2077 describes this caching), so the cached tensor carries the graph of
the first evaluation of ``C1``; the maintainer's answer was to express the parameter where
it is evaluated at every step.

Reduction: the setting is a harbour tide model. A small network maps (distance from the
open sea, time) to sea-level anomaly; its losses are tide-gauge observations, a
progressive-wave residual and an open-boundary condition whose forcing amplitude
``M2 amplitude`` is learned. The boundary helper memoises its values per set of boundary
points, as DeepXDE's BC does, so the cached tensor holds the amplitude's graph.
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(11)

CONFIG = {
    "wave_speed": 1.5,
    "omega": 2 * math.pi / 12.42,  # M2 constituent, hours
    "n_collocation": 128,
    "n_boundary": 32,
    "n_gauge": 48,
    "hidden": 32,
    "lr": 3e-3,
    "iterations": 3,
    "weights": {"gauge": 1.0, "wave": 0.1, "boundary": 1.0},
}


class TideNet(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(2, hidden), nn.Tanh(),
            nn.Linear(hidden, hidden), nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def forward(self, xt):
        return self.body(xt)


class OpenBoundaryForcing:
    """Sea level imposed at the seaward edge (x = 0): A * cos(omega * t)."""

    def __init__(self, omega, init_amplitude=0.5):
        self.omega = omega
        self.amplitude = nn.Parameter(torch.tensor(init_amplitude))
        self._values = {}

    def values(self, key, t):
        if key not in self._values:
            self._values[key] = torch.cos(self.omega * t)
        return self.amplitude * self._values[key]


def sample_points(cfg):
    x = torch.rand(cfg["n_collocation"], 1) * 10.0
    t = torch.rand(cfg["n_collocation"], 1) * 24.0
    tb = torch.rand(cfg["n_boundary"], 1) * 24.0
    xg = torch.rand(cfg["n_gauge"], 1) * 10.0
    tg = torch.rand(cfg["n_gauge"], 1) * 24.0
    true_amp = 1.2
    eta_g = true_amp * torch.cos(cfg["omega"] * (tg - xg / cfg["wave_speed"]))
    eta_g = eta_g + 0.02 * torch.randn_like(eta_g)
    return (x, t), tb, (xg, tg, eta_g)


def wave_residual(net, x, t, c):
    x = x.clone().requires_grad_(True)
    t = t.clone().requires_grad_(True)
    eta = net(torch.cat([x, t], dim=1))
    d_t, d_x = torch.autograd.grad(eta.sum(), [t, x], create_graph=True)
    return d_t + c * d_x


def fit(net, forcing, optimizer, data, cfg):
    (x, t), tb, (xg, tg, eta_g) = data
    w = cfg["weights"]
    for it in range(cfg["iterations"]):
        gauge_loss = nn.functional.mse_loss(net(torch.cat([xg, tg], dim=1)), eta_g)
        wave_loss = wave_residual(net, x, t, cfg["wave_speed"]).pow(2).mean()
        eta_b = net(torch.cat([torch.zeros_like(tb), tb], dim=1))
        boundary_loss = nn.functional.mse_loss(eta_b, forcing.values("seaward", tb))
        total_loss = w["gauge"] * gauge_loss + w["wave"] * wave_loss + w["boundary"] * boundary_loss
        optimizer.zero_grad()
        total_loss.backward()
        optimizer.step()
        print(f"it {it}: total {total_loss.item():.4f}  M2 amplitude {forcing.amplitude.item():.3f}")


def main():
    cfg = CONFIG
    data = sample_points(cfg)
    net = TideNet(cfg["hidden"])
    forcing = OpenBoundaryForcing(cfg["omega"])
    optimizer = torch.optim.Adam(list(net.parameters()) + [forcing.amplitude], lr=cfg["lr"])
    fit(net, forcing, optimizer, data, cfg)


if __name__ == "__main__":
    main()
