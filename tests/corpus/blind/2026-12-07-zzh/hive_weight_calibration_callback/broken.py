"""Beehive scale-weight forecasting with a per-hive calibration callback.

Source: https://discuss.pytorch.org/t/understanding-graphs-and-state/224 ("Understanding graphs
and state"). The author studied when graph buffers are freed: with ``y = x.mean(...) + 3`` and
``z = y.pow(2).mean()``, the sequence ``z.backward()``, ``y.backward(...)``, ``z.backward()``
fails on the last call, because the first backward through ``z`` already freed the buffers its
graph saved (the reply confirms that every backward but the last needs ``retain_graph=True``,
and that only ops which saved tensors fail on a second pass).

The script reduces that to a training loop where one loss is backwarded twice: a GRU forecaster
predicts tomorrow's weight change of each hive from a week of scale readings (weight, brood
temperature, humidity, hour of peak flight), and a per-hive offset table corrects scale drift.
The trainer backwards the forecast loss and steps the forecaster's optimizer; a calibration
callback registered on the trainer then runs its own ``backward()`` of the same loss, already
freed, to step the offset table's optimizer.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "seed": 23,
    "n_hives": 10,
    "days": 7,
    "features": 4,
    "hidden": 16,
    "samples": 60,
    "batch": 15,
    "epochs": 3,
    "lr": 5e-3,
    "calib_lr": 1e-2,
}


def synth_scale_logs(hp):
    """A week of readings per sample; the target is the next day's weight change in kg."""
    n, d, f = hp["samples"], hp["days"], hp["features"]
    hive_ids = torch.randint(0, hp["n_hives"], (n,))
    drift = torch.linspace(-0.3, 0.3, hp["n_hives"])
    nectar_flow = torch.rand(n, 1) * 2.0
    days = torch.arange(d).float().view(1, d)
    weight = nectar_flow * days * 0.4 + 0.1 * torch.randn(n, d)
    temp = 34.5 + 0.3 * torch.randn(n, d)
    humidity = 0.6 + 0.1 * torch.randn(n, d)
    flight = nectar_flow * 0.5 + 0.1 * torch.randn(n, d)
    logs = torch.stack([weight, (temp - 34.5), humidity, flight], dim=-1)
    target = nectar_flow.squeeze(1) * 0.4 + drift[hive_ids]
    return logs, hive_ids, target


class WeightForecaster(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.gru = nn.GRU(hp["features"], hp["hidden"], batch_first=True)
        self.head = nn.Linear(hp["hidden"], 1)

    def forward(self, logs):
        _, h = self.gru(logs)
        return self.head(h[-1]).squeeze(-1)


class HiveCalibration:
    """Fits a per-hive offset for scale drift from the forecast error of every batch."""

    def __init__(self, table, optimizer):
        self.table = table
        self.optimizer = optimizer

    def on_batch_end(self, trainer, loss):
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


class Trainer:
    def __init__(self, model, offsets, optimizer, callbacks):
        self.model = model
        self.offsets = offsets
        self.optimizer = optimizer
        self.callbacks = callbacks

    def fit_batch(self, logs, hive_ids, target):
        pred = self.model(logs) + self.offsets(hive_ids).squeeze(-1)
        forecast_loss = F.mse_loss(pred, target)
        self.optimizer.zero_grad()
        forecast_loss.backward()
        self.optimizer.step()
        for cb in self.callbacks:
            cb.on_batch_end(self, forecast_loss)
        return forecast_loss.item()


def run(hp):
    torch.manual_seed(hp["seed"])
    logs, hive_ids, target = synth_scale_logs(hp)
    forecaster = WeightForecaster(hp)
    hive_offsets = nn.Embedding(hp["n_hives"], 1)
    nn.init.zeros_(hive_offsets.weight)
    optimizer = torch.optim.Adam(forecaster.parameters(), lr=hp["lr"])
    calib_opt = torch.optim.SGD(hive_offsets.parameters(), lr=hp["calib_lr"])
    trainer = Trainer(forecaster, hive_offsets, optimizer, [HiveCalibration(hive_offsets, calib_opt)])

    for epoch in range(hp["epochs"]):
        order = torch.randperm(hp["samples"])
        losses = []
        for start in range(0, hp["samples"], hp["batch"]):
            idx = order[start : start + hp["batch"]]
            losses.append(trainer.fit_batch(logs[idx], hive_ids[idx], target[idx]))
        print(f"epoch {epoch}: forecast mse {sum(losses) / len(losses):.4f}")


if __name__ == "__main__":
    run(HPARAMS)
