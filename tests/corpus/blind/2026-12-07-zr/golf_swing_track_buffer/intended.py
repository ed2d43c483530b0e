"""Golf swing analysis: learning a wrist-torque profile from launch-monitor data.

Source: https://discuss.pytorch.org/t/trouble-understanding-version-semantics/115442
The author simulated particles with Newtonian mechanics (positions, velocities and
accelerations stepped in time) and trained the simulation's inputs through the
rollout; training failed with an error about a tensor's ``_version`` no longer being
the expected one, and the author asked which tensors may be modified in place and
started hunting for a state tensor that was neither a parameter nor recreated.

Reduction: a one-joint swing model integrates club angle and angular speed with a
learned torque and quadratic air drag. The simulator writes each step's state into a
track tensor it allocated once, by index assignment, while the drag term of the next
step has saved the previous row of that same tensor for backward.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

SWING = {
    "steps": 24,
    "dt": 0.012,
    "club_length": 1.1,
    "drag": 0.015,
    "n_golfers": 48,
    "batch": 16,
    "iters": 5,
    "lr": 1e-2,
}


def launch_monitor_data(cfg):
    """Address angle, golfer features and measured club-head speed at impact."""
    feats = torch.randn(cfg["n_golfers"], 4)
    address = -math.pi * 0.75 + 0.1 * torch.randn(cfg["n_golfers"])
    speed = 38.0 + 4.0 * feats[:, 0] + torch.randn(cfg["n_golfers"])
    return feats, address, speed


class TorqueProfile(nn.Module):
    """Torque at each phase of the downswing, conditioned on golfer features."""

    def __init__(self, n_feats=4, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_feats + 1, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, feats, phase):
        phase_col = torch.full((feats.shape[0], 1), phase)
        return 60.0 * self.net(torch.cat([feats, phase_col], dim=1)).squeeze(1)


class SwingSimulator:
    def __init__(self, cfg, batch):
        self.cfg = cfg
        self.batch = batch

    def rollout(self, torque_fn, feats, address):
        cfg = self.cfg
        theta, omega = address, torch.zeros(self.batch)
        states = [torch.stack([theta, omega], dim=1)]
        for t in range(cfg["steps"]):
            torque = torque_fn(feats, t / cfg["steps"])
            drag = -cfg["drag"] * omega * omega.abs()
            omega = omega + (torque + drag) * cfg["dt"]
            theta = theta + omega * cfg["dt"]
            states.append(torch.stack([theta, omega], dim=1))
        return torch.stack(states)


def swing_losses(track, speed, cfg):
    head_speed = cfg["club_length"] * track[-1, :, 1]
    speed_loss = F.smooth_l1_loss(head_speed, speed)
    impact_loss = (track[-1, :, 0] - 0.0).pow(2).mean()
    return speed_loss, impact_loss


def fit(cfg):
    feats, address, speed = launch_monitor_data(cfg)
    torque_net = TorqueProfile()
    opt_swing = torch.optim.Adam(torque_net.parameters(), lr=cfg["lr"])
    sim = SwingSimulator(cfg, cfg["batch"])
    for it in range(cfg["iters"]):
        idx = torch.randperm(cfg["n_golfers"])[: cfg["batch"]]
        track = sim.rollout(torque_net, feats[idx], address[idx])
        speed_loss, impact_loss = swing_losses(track, speed[idx], cfg)
        swing_loss = speed_loss + 5.0 * impact_loss
        opt_swing.zero_grad()
        swing_loss.backward()
        opt_swing.step()
        print(f"iter {it}: speed {speed_loss.item():.3f} impact {impact_loss.item():.3f}")


if __name__ == "__main__":
    fit(SWING)
