"""Geyser eruption-interval forecasting with lazily built tidal harmonics.

Source: https://github.com/pytorch/pytorch/pull/161164
The pull request rewords the "Inference tensors cannot be saved for backward"
error and the inference_mode docs: do not use tensors created in inference mode
in computation tracked by autograd; in review the message was extended to
suggest torch.no_grad() for evaluation instead (the reviewer had just hit the
error in a trainer that mixed training with an inference_mode evaluate()).
Reduced here to a geyser forecaster whose harmonic modulation table
(earth-tide and diurnal periods) is built on the first forward and cached on
the module; the script scores the untrained model once before training with an
@torch.inference_mode() evaluate(), so the cached table is an inference tensor
when the training forward uses it.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

OPTS = {"n_windows": 48, "window": 24, "n_sensors": 4, "hidden": 16,
        "periods_h": (12.42, 24.0, 25.8), "batch": 12, "epochs": 2, "lr": 2e-3}


def basin_records(opts):
    g = torch.Generator().manual_seed(8)
    n, w, s = opts["n_windows"], opts["window"], opts["n_sensors"]
    x = torch.randn(n, w, s, generator=g).cumsum(dim=1) * 0.1   # pool temp, tremor, discharge, pressure
    interval = 90 + 10 * x[:, -1, 0] - 6 * x[:, -1, 1] + torch.randn(n, generator=g)
    return x, (interval - 90) / 10


class HarmonicTable(nn.Module):
    def __init__(self, periods, hidden):
        super().__init__()
        self.periods = periods
        self.mix = nn.Linear(2 * len(periods), hidden, bias=False)
        self._basis = None

    def basis(self, length):
        if self._basis is None or self._basis.shape[0] != length:
            hours = torch.arange(length, dtype=torch.float32).unsqueeze(1)
            omega = torch.tensor([2 * math.pi / p for p in self.periods]).unsqueeze(0)
            self._basis = torch.cat([torch.sin(hours * omega), torch.cos(hours * omega)], dim=1)
        return self._basis

    def forward(self, length):
        return self.mix(self.basis(length))


class EruptionForecaster(nn.Module):
    def __init__(self, opts):
        super().__init__()
        self.inp = nn.Linear(opts["n_sensors"], opts["hidden"])
        self.tides = HarmonicTable(opts["periods_h"], opts["hidden"])
        self.gru = nn.GRU(opts["hidden"], opts["hidden"], batch_first=True)
        self.out = nn.Linear(opts["hidden"], 1)

    def forward(self, x):
        h = self.inp(x) * (1 + torch.tanh(self.tides(x.shape[1])))
        _, last = self.gru(h)
        return self.out(last[-1]).squeeze(-1)


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    err = F.l1_loss(model(x), y).item()
    model.train()
    return err


def main():
    torch.manual_seed(0)
    x, y = basin_records(OPTS)
    model = EruptionForecaster(OPTS)
    opt = torch.optim.Adam(model.parameters(), lr=OPTS["lr"])
    print(f"baseline MAE {evaluate(model, x, y):.3f}")
    for epoch in range(OPTS["epochs"]):
        for i in range(0, OPTS["n_windows"], OPTS["batch"]):
            opt.zero_grad()
            interval_loss = F.smooth_l1_loss(model(x[i:i + OPTS["batch"]]), y[i:i + OPTS["batch"]])
            interval_loss.backward()
            opt.step()
        print(f"epoch {epoch}: MAE {evaluate(model, x, y):.3f}")


if __name__ == "__main__":
    main()
