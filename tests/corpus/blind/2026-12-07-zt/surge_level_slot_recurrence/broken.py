"""Storm-surge warning: a learned surge recurrence rolled out into a preallocated level tensor.

Source: https://github.com/pytorch/pytorch/issues/36470

The report computes f(n) = sigmoid(f(n-1) * x) by writing every step into a
preallocated tensor, ``f[i] = f[i-1] * x`` followed by ``f[i] = 1 / (1 + exp(-f[i]))``,
and asks why autograd complains that a variable needed for gradient computation
was modified by an inplace operation, since no slot is touched again after it is
computed. This script keeps that shape in a tide-gauge surge model: a small MLP
turns wind and pressure forcing into a per-hour drive, and the surge level of each
hour is written into slot ``t`` of a ``levels`` tensor from the level in slot
``t - 1``, then squashed in place in the same slot. The warning head is trained
on the rolled-out levels against observed surge.
"""
import torch
import torch.nn as nn

CONFIG = {
    "stations": 16,
    "hours": 24,
    "forcing_features": 5,
    "hidden": 32,
    "lr": 3e-3,
    "epochs": 4,
}


def make_storm_batch(cfg):
    forcing = torch.randn(cfg["stations"], cfg["hours"], cfg["forcing_features"])
    observed = torch.sigmoid(forcing[..., 0].cumsum(dim=1) * 0.2) * 0.8
    return forcing, observed


class SurgeDrive(nn.Module):
    def __init__(self, n_in, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, 2))

    def forward(self, forcing):
        out = self.net(forcing)
        gain = torch.sigmoid(out[..., 0]) * 1.5
        push = out[..., 1]
        return gain, push


class SurgeRollout(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.drive = SurgeDrive(cfg["forcing_features"], cfg["hidden"])
        self.initial_level = nn.Parameter(torch.tensor(0.1))

    def forward(self, forcing):
        gain, push = self.drive(forcing)
        n_sta, n_hours = gain.shape
        levels = torch.zeros(n_sta, n_hours + 1)
        levels[:, 0] = self.initial_level
        for t in range(1, n_hours + 1):
            levels[:, t] = levels[:, t - 1] * gain[:, t - 1] + push[:, t - 1]
            levels[:, t] = 1.0 / (1.0 + torch.exp(-levels[:, t]))
        return levels[:, 1:]


def warning_flags(levels, threshold=0.6):
    return (levels > threshold).float().mean().item()


def train(cfg):
    torch.manual_seed(7)
    forcing, observed = make_storm_batch(cfg)
    rollout = SurgeRollout(cfg)
    surge_opt = torch.optim.Adam(rollout.parameters(), lr=cfg["lr"])
    mse = nn.MSELoss()

    for epoch in range(cfg["epochs"]):
        surge_opt.zero_grad()
        levels = rollout(forcing)
        surge_loss = mse(levels, observed)
        surge_loss.backward()
        surge_opt.step()
        print(f"epoch {epoch}: surge mse {surge_loss.item():.4f}, "
              f"warned station-hours {warning_flags(levels.detach()):.2f}")


if __name__ == "__main__":
    train(CONFIG)
