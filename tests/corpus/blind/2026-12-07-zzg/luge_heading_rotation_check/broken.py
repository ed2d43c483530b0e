"""Luge steering: a policy predicts the sled's heading change as a planar rotation.

Source: https://github.com/utiasSTARS/liegroups/issues/4 (using liegroups' ``SO2.from_matrix`` on a
predicted batch of rotation matrices inside a loss raised "Can't call numpy() on Variable that
requires grad"; the maintainer explained that the constructor converts to numpy to validate and
normalise the matrices with np.linalg, added the missing ``detach()`` calls there, and pointed to
the unchecked constructor ``SO2(rotation)`` as an alternative).

Reduction: a steering network reads the curvature of the next track sections, the sled's speed and
its lateral offset, and outputs a direction (cos, sin) turned into a 2x2 rotation; a small SO(2)
helper class, written like liegroups', validates the matrix with NumPy in ``from_matrix`` and
takes its log as the heading angle; the loss is the wrapped angle error to the racing line's
heading change plus a steering-effort term. The training setting is the writer's.
"""
import math

import numpy as np
import torch
import torch.nn as nn

OPTS = {"seed": 13, "runs": 64, "lookahead": 6, "hidden": 32, "lr": 3e-3, "epochs": 5,
        "effort_weight": 0.02, "tol": 1e-4}


class SO2:
    def __init__(self, mat):
        self.mat = mat

    @classmethod
    def is_valid_matrix(cls, mat, tol):
        arr = mat.numpy()
        det_ok = np.all(np.abs(np.linalg.det(arr) - 1.0) < tol)
        eye = np.eye(2)[None]
        orth_ok = np.all(np.abs(arr @ arr.transpose(0, 2, 1) - eye) < tol)
        return bool(det_ok and orth_ok)

    @classmethod
    def from_matrix(cls, mat, tol=1e-4):
        if not cls.is_valid_matrix(mat, tol):
            raise ValueError("not a batch of rotation matrices")
        return cls(mat)

    @classmethod
    def exp(cls, angle):
        c, s = torch.cos(angle), torch.sin(angle)
        return cls(torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2))

    def inv(self):
        return SO2(self.mat.transpose(-1, -2))

    def dot(self, other):
        return SO2(self.mat @ other.mat)

    def log(self):
        return torch.atan2(self.mat[..., 1, 0], self.mat[..., 0, 0])


class SteeringPolicy(nn.Module):
    def __init__(self, lookahead, hidden):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(lookahead + 2, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, 2))

    def forward(self, obs):
        v = self.mlp(obs) + torch.tensor([1.0, 0.0])
        v = v / v.norm(dim=-1, keepdim=True)
        c, s = v[:, 0], v[:, 1]
        return torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)


def make_runs(cfg):
    curvature = 0.3 * torch.randn(cfg["runs"], cfg["lookahead"]).cumsum(dim=1) / math.sqrt(cfg["lookahead"])
    speed = 25.0 + 5.0 * torch.rand(cfg["runs"], 1)
    offset = 0.2 * torch.randn(cfg["runs"], 1)
    obs = torch.cat([curvature, (speed - 25.0) / 5.0, offset], dim=1)
    weights = torch.linspace(1.0, 0.2, cfg["lookahead"])
    target_turn = 0.5 * (curvature * weights).sum(dim=1) / weights.sum() - 0.3 * offset.squeeze(1)
    return obs, target_turn


def heading_loss(pred_mat, target_turn, cfg):
    pred = SO2.from_matrix(pred_mat, tol=cfg["tol"])
    target = SO2.exp(target_turn)
    err = target.inv().dot(pred).log()
    effort = pred.log().pow(2).mean()
    return err.pow(2).mean() + cfg["effort_weight"] * effort


def main():
    cfg = OPTS
    torch.manual_seed(cfg["seed"])
    obs, target_turn = make_runs(cfg)
    policy = SteeringPolicy(cfg["lookahead"], cfg["hidden"])
    opt = torch.optim.Adam(policy.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        steer_loss = heading_loss(policy(obs), target_turn, cfg)
        opt.zero_grad()
        steer_loss.backward()
        opt.step()
        print(f"epoch {epoch} steering loss {steer_loss.item():.6f}")


if __name__ == "__main__":
    main()
