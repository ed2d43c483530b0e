"""Desert locust swarm forecasting: predicted band density and its spread for the next weeks.

Source: https://github.com/pytorch/pytorch/pull/56093

The report: the pull request that finished the deprecation cycle of in-place ops
on views, so that modifying in place a view returned by a function that returns
several views (``split``, ``chunk``, ``unbind``) raises an error instead of a
warning; it points users to the out-of-place op. This script is a forecaster
whose head emits the mean and the log-spread of a Gaussian in one tensor, split
with ``chunk``; the log-spread half is then clamped in place to keep the
likelihood stable, which is an in-place op on one of ``chunk``'s views.
"""

import torch
import torch.nn as nn

SETTINGS = {
    "n_cells": 96,
    "features": 9,  # rainfall, NDVI, soil moisture, temperature, wind, past densities...
    "horizon": 4,
    "hidden": 48,
    "batch": 24,
    "lr": 3e-3,
    "epochs": 2,
    "log_spread_range": (-4.0, 3.0),
}


class SwarmForecaster(nn.Module):
    def __init__(self, features, hidden, horizon, log_spread_range):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(features, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh()
        )
        self.head = nn.Linear(hidden, 2 * horizon)
        self.low, self.high = log_spread_range

    def forward(self, x):
        out = self.head(self.encoder(x))
        mean, log_spread = out.chunk(2, dim=-1)
        log_spread = log_spread.clamp(self.low, self.high)
        return mean, log_spread


def gaussian_nll(mean, log_spread, target):
    return (0.5 * ((target - mean) * torch.exp(-log_spread)) ** 2 + log_spread).mean()


def synthetic_cells(cfg):
    x = torch.randn(cfg["n_cells"], cfg["features"])
    drift = torch.randn(cfg["features"], cfg["horizon"]) * 0.5
    y = x @ drift + 0.3 * torch.randn(cfg["n_cells"], cfg["horizon"])
    return x, y


def train_step(forecaster, opt, xb, yb):
    opt.zero_grad()
    mean, log_spread = forecaster(xb)
    nll_loss = gaussian_nll(mean, log_spread, yb)
    nll_loss.backward()
    opt.step()
    return nll_loss.item()


def main():
    torch.manual_seed(2026)
    cfg = SETTINGS
    x, y = synthetic_cells(cfg)
    forecaster = SwarmForecaster(cfg["features"], cfg["hidden"], cfg["horizon"], cfg["log_spread_range"])
    opt = torch.optim.AdamW(forecaster.parameters(), lr=cfg["lr"], weight_decay=1e-4)
    for epoch in range(cfg["epochs"]):
        perm = torch.randperm(cfg["n_cells"])
        losses = []
        for start in range(0, cfg["n_cells"], cfg["batch"]):
            idx = perm[start : start + cfg["batch"]]
            losses.append(train_step(forecaster, opt, x[idx], y[idx]))
        print(f"epoch {epoch}: nll {sum(losses) / len(losses):.4f}")


if __name__ == "__main__":
    main()
