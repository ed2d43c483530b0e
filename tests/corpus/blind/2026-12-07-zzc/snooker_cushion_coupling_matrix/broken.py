"""Snooker shot planning: predict where the cue ball stops after a one-cushion shot.

Source: https://discuss.pytorch.org/t/leaf-variable-has-been-moved-into-the-graph-interior/18679/6
The forum author built a learnable matrix W by assigning products of learnable
scalars into its entries (W[0] = w1 * w2; W[1] = w2 * w3; W[2] = w3 * w1) and
got a leaf-variable error; the answer points at those in-place re-assignments
of W's values. This script reduces that to a snooker shot planner: a small
physics layer maps the shot (cue-ball speed, cut angle, side and top spin) to a
rebound off the cushion through a 3x3 spin/velocity coupling matrix whose
entries are products of learnable restitution and friction coefficients, and an
MLP corrects the physics estimate of the cue ball's resting position.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(47)

TABLE = {"length": 3.569, "width": 1.778}   # metres, full-size table bed
TRAIN = {"shots": 48, "steps": 5, "lr": 1e-2, "hidden": 32}


class CushionPhysics(nn.Module):
    """Rebound (vx, vy, spin) -> (vx', vy', spin') through a learnable coupling matrix."""

    def __init__(self):
        super().__init__()
        self.restitution = nn.Parameter(torch.tensor(0.85))
        self.friction = nn.Parameter(torch.tensor(0.2))
        self.spin_transfer = nn.Parameter(torch.tensor(0.4))
        self.coupling = nn.Parameter(torch.eye(3))

    def forward(self, state):
        self.coupling[0, 0] = self.restitution * self.friction
        self.coupling[0, 2] = self.friction * self.spin_transfer
        self.coupling[1, 1] = -self.restitution
        self.coupling[2, 0] = self.spin_transfer * self.restitution
        return state @ self.coupling.T


class ShotPlanner(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.cushion = CushionPhysics()
        self.correct = nn.Sequential(nn.Linear(7, hidden), nn.Tanh(), nn.Linear(hidden, 2))

    def forward(self, shot):
        speed, angle, side, top = shot.unbind(1)
        state = torch.stack([speed * torch.cos(angle), speed * torch.sin(angle), side], dim=1)
        rebound = self.cushion(state)
        travel = 0.5 * (1.0 + 0.3 * top).unsqueeze(1)
        physics_xy = rebound[:, :2] * travel
        return physics_xy + 0.1 * self.correct(torch.cat([shot, rebound], dim=1))


def practice_shots(n):
    speed = 0.5 + 1.5 * torch.rand(n)
    angle = (torch.rand(n) - 0.5) * math.pi / 2
    side = torch.randn(n) * 0.3
    top = torch.randn(n) * 0.3
    shot = torch.stack([speed, angle, side, top], dim=1)
    rest_x = 0.6 * speed * torch.cos(angle) * (1 + 0.2 * top) + 0.1 * side
    rest_y = -0.8 * speed * torch.sin(angle) + 0.05 * torch.randn(n)
    rest = torch.stack([rest_x, rest_y], dim=1).clamp(-TABLE["width"], TABLE["width"])
    return shot, rest


def fit(planner, optim_shot, cfg):
    for step in range(cfg["steps"]):
        shot, rest = practice_shots(cfg["shots"])
        pred = planner(shot)
        position_loss = F.mse_loss(pred, rest)
        optim_shot.zero_grad()
        position_loss.backward()
        optim_shot.step()
        print(f"step {step}: position mse {position_loss.item():.4f} "
              f"e={planner.cushion.restitution.item():.3f}")


if __name__ == "__main__":
    planner = ShotPlanner(TRAIN["hidden"])
    optim_shot = torch.optim.Adam(planner.parameters(), lr=TRAIN["lr"])
    fit(planner, optim_shot, TRAIN)
