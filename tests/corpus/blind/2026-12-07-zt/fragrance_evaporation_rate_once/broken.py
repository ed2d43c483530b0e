"""Perfume formulation: physics-informed fit of note evaporation with learned rate constants.

Source: https://github.com/lululxvi/deepxde/issues/637

The report solves an ODE parameter-identification problem with DeepXDE's PyTorch
backend: the unknown constants are ``dde.Variable`` objects used inside the ODE
residual. With two unknowns it trains; after adding a third unknown the first
training iterations end with "Trying to backward through the graph a second
time". The maintainer's reply is that the examples run, so the problem is in the
author's code; the thread shows the unknowns defined at module level (a third one,
``kp_``, next to them) but not the cause. This reduction takes a cause of that
message for this setting: a constant derived from the unknowns once, at module
level, and used by the residual at every iteration. It moves it to a fragrance
setting without DeepXDE: a network maps time to the remaining fraction of the
top, heart and base notes of a blend on a blotter; the residual of a first-order
evaporation ODE uses per-note rate constants from learnable log-rates and a shared
skin-temperature factor, and the loss adds the fit to gas-chromatography readings.
"""
import math

import torch
import torch.nn as nn

BLEND = {
    "notes": ["top", "heart", "base"],
    "t_max_h": 8.0,
    "collocation": 64,
    "readings": 12,
    "hidden": 32,
    "lr": 3e-3,
    "iterations": 4,
    "true_rates": [0.9, 0.35, 0.08],
}


class NoteCurve(nn.Module):
    def __init__(self, n_notes, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, n_notes)
        )

    def forward(self, t):
        return torch.exp(-t * 0.1) * (1.0 + self.net(t))


def gc_readings(cfg):
    t = torch.linspace(0.0, cfg["t_max_h"], cfg["readings"]).unsqueeze(1)
    rates = torch.tensor(cfg["true_rates"])
    frac = torch.exp(-t * rates) + 0.01 * torch.randn(cfg["readings"], len(rates))
    return t, frac


torch.manual_seed(5)
log_rate = nn.Parameter(torch.log(torch.tensor([0.5, 0.5, 0.5])))
log_skin = nn.Parameter(torch.tensor(0.0))
rates = torch.exp(log_rate) * torch.exp(log_skin)


def evaporation_residual(t, frac):
    dfrac_dt = torch.autograd.grad(frac, t, torch.ones_like(frac), create_graph=True)[0]
    return dfrac_dt + rates * frac


def fit(cfg):
    curve = NoteCurve(len(cfg["notes"]), cfg["hidden"])
    t_obs, frac_obs = gc_readings(cfg)
    t_col = torch.rand(cfg["collocation"], 1) * cfg["t_max_h"]
    pinn_opt = torch.optim.Adam(list(curve.parameters()) + [log_rate, log_skin], lr=cfg["lr"])

    for it in range(cfg["iterations"]):
        pinn_opt.zero_grad()
        t = t_col.clone().requires_grad_(True)
        frac = curve(t)
        ode_loss = evaporation_residual(t, frac).pow(2).mean()
        data_loss = (curve(t_obs) - frac_obs).pow(2).mean()
        total_loss = ode_loss + data_loss
        total_loss.backward()
        pinn_opt.step()
        est = (torch.exp(log_rate) * torch.exp(log_skin)).detach()
        print(f"iter {it}: ode {ode_loss.item():.4f} data {data_loss.item():.4f} "
              f"half-life h {[round(math.log(2) / r, 2) for r in est.tolist()]}")


if __name__ == "__main__":
    fit(BLEND)
