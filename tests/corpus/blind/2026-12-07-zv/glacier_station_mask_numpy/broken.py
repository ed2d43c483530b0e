"""Glacier melt forecasting from a network of weather stations, with a learned station-selection mask.

Source: https://github.com/DSE-MSU/DeepRobust/pull/16 ("Bugfix for graph PGD class - test failing").
DeepRobust's PGD topology attack keeps its edge perturbations in a trainable tensor (adj_changes) and,
in random_sample, draws Bernoulli perturbations from it with numpy: `self.adj_changes.cpu().numpy()`
raised "Can't call numpy() on Variable that requires grad". The merged fix adds .detach().

This script moves the pattern to a melt model that learns which of its automatic weather stations to
keep (a relaxed keep-probability per station, trained through a sigmoid gate with a sparsity cost) and,
each step, draws a hard station mask with numpy from those probabilities for a dropout-style pass.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = {"stations": 9, "features": 4, "hidden": 32, "batch": 64, "steps": 5, "lr": 5e-3, "sparsity": 1e-2}


def synth_station_records(n, cfg):
    """Per-station daily means: air temperature, shortwave radiation, wind, humidity; target is melt (mm w.e.)."""
    x = torch.randn(n, cfg["stations"], cfg["features"])
    weights = torch.linspace(1.0, 0.1, cfg["stations"]).unsqueeze(1)
    degree_day = (F.relu(x[:, :, 0]) * weights.squeeze(1)).sum(dim=1)
    radiation = (x[:, :, 1] * weights.squeeze(1)).sum(dim=1)
    melt = 2.0 * degree_day + 0.8 * radiation + 0.1 * torch.randn(n)
    return x, melt.unsqueeze(1)


class StationGate(nn.Module):
    def __init__(self, n_stations):
        super().__init__()
        self.keep_logits = nn.Parameter(torch.full((n_stations,), 1.5))

    def keep_prob(self):
        return torch.sigmoid(self.keep_logits)

    def forward(self, x, hard_mask=None):
        gate = self.keep_prob() if hard_mask is None else hard_mask * self.keep_prob()
        return x * gate.view(1, -1, 1)


class MeltModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gate = StationGate(cfg["stations"])
        self.body = nn.Sequential(
            nn.Linear(cfg["stations"] * cfg["features"], cfg["hidden"]), nn.SiLU(), nn.Linear(cfg["hidden"], 1)
        )

    def forward(self, x, hard_mask=None):
        return self.body(self.gate(x, hard_mask).flatten(1))


def sample_station_mask(gate, rng):
    probs = gate.keep_prob().cpu().numpy()
    draw = rng.binomial(1, probs).astype(np.float32)
    return torch.from_numpy(draw)


def main():
    torch.manual_seed(5)
    rng = np.random.default_rng(5)
    cfg = CFG
    x, melt = synth_station_records(cfg["batch"] * cfg["steps"], cfg)
    model = MeltModel(cfg)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    for step in range(cfg["steps"]):
        sl = slice(step * cfg["batch"], (step + 1) * cfg["batch"])
        mask = sample_station_mask(model.gate, rng)
        pred = model(x[sl], hard_mask=mask)
        melt_loss = F.mse_loss(pred, melt[sl])
        sparsity_loss = cfg["sparsity"] * model.gate.keep_prob().sum()
        optimizer.zero_grad()
        (melt_loss + sparsity_loss).backward()
        optimizer.step()
        print(f"step {step}: melt {melt_loss.item():.3f} stations kept {int(mask.sum())}")


if __name__ == "__main__":
    main()
