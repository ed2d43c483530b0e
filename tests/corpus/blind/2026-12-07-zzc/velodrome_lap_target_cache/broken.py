"""Velodrome pacing: lap-time predictor trained against a learnable race-profile schedule.

Source: https://discuss.pytorch.org/t/is-the-graph-rebuilt-every-iteration/60513
The forum author asked whether the computation graph is rebuilt every iteration;
the answer: the graph is recorded while the operations run (in forward or in any
other operation on a tensor that requires grad) and is cleared after backward()
unless retain_graph=True. This script reduces that to a track-cycling pacing
model whose target lap-time profile comes from a small learnable schedule
(start speed, fade rate, final-lap kick). The schedule computes its per-lap
targets once, on the first call, and keeps them on the module for later batches,
so the tensors it hands out were recorded by the first step's graph.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

CONFIG = {
    "laps": 16,            # 4 km team pursuit on a 250 m track
    "rider_features": 6,   # FTP, weight, CdA, cadence, turn length, position in line
    "hidden": 32,
    "batch": 24,
    "steps": 6,
    "lr": 3e-3,
    "schedule_weight": 0.5,
}


class RaceProfileSchedule(nn.Module):
    """Parametric lap-time profile: fast standing start, gradual fade, kick on the last lap."""

    def __init__(self, laps):
        super().__init__()
        self.laps = laps
        self.base_lap = nn.Parameter(torch.tensor(14.2))
        self.start_penalty = nn.Parameter(torch.tensor(3.0))
        self.fade = nn.Parameter(torch.tensor(0.04))
        self.kick = nn.Parameter(torch.tensor(0.3))
        self._targets = None

    def lap_targets(self):
        if self._targets is None:
            lap_idx = torch.arange(self.laps, dtype=torch.float32)
            start = self.start_penalty * torch.exp(-2.0 * lap_idx)
            fade = self.fade * lap_idx
            kick = torch.zeros(self.laps)
            kick[-1] = 1.0
            self._targets = self.base_lap + start + fade - self.kick * kick
        return self._targets


class LapTimePredictor(nn.Module):
    def __init__(self, n_features, laps, hidden):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(n_features, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
        )
        self.lap_head = nn.Linear(hidden, laps)

    def forward(self, riders):
        return 14.0 + self.lap_head(self.body(riders))


def synthetic_session(cfg):
    riders = torch.randn(cfg["batch"], cfg["rider_features"])
    lap_idx = torch.arange(cfg["laps"], dtype=torch.float32)
    profile = 14.5 + 2.5 * torch.exp(-2.0 * lap_idx) + 0.05 * lap_idx
    strength = riders[:, :1] * 0.3
    observed = profile.unsqueeze(0) - strength + 0.1 * torch.randn(cfg["batch"], cfg["laps"])
    return riders, observed


def pacing_objective(pred, observed, targets, weight):
    fit = F.smooth_l1_loss(pred, observed)
    schedule_fit = F.mse_loss(targets.expand_as(observed), observed)
    adherence = F.mse_loss(pred.mean(0), targets)
    return fit + weight * (schedule_fit + adherence)


def main(cfg):
    pacer = LapTimePredictor(cfg["rider_features"], cfg["laps"], cfg["hidden"])
    schedule = RaceProfileSchedule(cfg["laps"])
    optimizer = torch.optim.Adam(
        list(pacer.parameters()) + list(schedule.parameters()), lr=cfg["lr"]
    )

    for step in range(cfg["steps"]):
        riders, observed = synthetic_session(cfg)
        pred = pacer(riders)
        targets = schedule.lap_targets()
        pace_loss = pacing_objective(pred, observed, targets, cfg["schedule_weight"])

        optimizer.zero_grad()
        pace_loss.backward()
        optimizer.step()
        print(f"step {step}: pace loss {pace_loss.item():.4f}, base lap {schedule.base_lap.item():.3f}s")


if __name__ == "__main__":
    main(CONFIG)
