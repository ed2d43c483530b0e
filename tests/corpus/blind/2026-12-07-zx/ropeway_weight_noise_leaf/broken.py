"""Ski-lift / cable-car haul-rope wear prediction, with weight-noise injection from a callback.

Source: https://github.com/pytorch/pytorch/issues/2940
The report adds a noise tensor in place to a leaf tensor that requires grad (``a.add_(noise)``) and
gets "a leaf Variable that requires grad has been used in an in-place operation" (noting that the
tensor is changed before the error is raised); the in-place update of a parameter has to happen
outside autograd's recording. This script reduces it to a training loop whose batch-start
callback jitters the input layer's weights with Gaussian noise as a regulariser against sensor
drift, written as a plain in-place add on the parameters.
"""
import torch
import torch.nn as nn

torch.manual_seed(5)

SENSORS = ["rope_tension", "sheave_vibration", "bullwheel_temp", "grip_slip", "wind_speed", "line_speed"]
HPARAMS = {"hidden": 32, "batch": 32, "epochs": 2, "batches_per_epoch": 3, "lr": 5e-3, "weight_noise": 0.01}


def telemetry_batch(n):
    """Hourly telemetry per tower, and the measured wire-break density at the next inspection."""
    x = torch.randn(n, len(SENSORS))
    wear = 0.6 * x[:, 0].abs() + 0.3 * x[:, 1] ** 2 + 0.1 * x[:, 3] + 0.05 * torch.randn(n)
    return x, wear.unsqueeze(1)


class WearRegressor(nn.Module):
    def __init__(self, n_in, hidden):
        super().__init__()
        self.inp = nn.Linear(n_in, hidden)
        self.body = nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        return nn.functional.softplus(self.out(self.body(self.inp(x))))


class WeightNoise:
    """Batch-start callback: Gaussian jitter on the input layer, so the model tolerates sensor drift."""

    def __init__(self, layer, std):
        self.params, self.std = list(layer.parameters()), std

    def on_batch_start(self):
        for p in self.params:
            p.add_(torch.randn_like(p) * self.std)


def run(model, optimizer, callbacks):
    loss_fn = nn.HuberLoss(delta=0.5)
    for epoch in range(HPARAMS["epochs"]):
        for b in range(HPARAMS["batches_per_epoch"]):
            x, wear = telemetry_batch(HPARAMS["batch"])
            for cb in callbacks:
                cb.on_batch_start()
            wear_loss = loss_fn(model(x), wear)
            optimizer.zero_grad()
            wear_loss.backward()
            optimizer.step()
        print(f"epoch {epoch} wear_loss={wear_loss.item():.4f}")


if __name__ == "__main__":
    regressor = WearRegressor(len(SENSORS), HPARAMS["hidden"])
    sgd = torch.optim.SGD(regressor.parameters(), lr=HPARAMS["lr"], momentum=0.9)
    run(regressor, sgd, [WeightNoise(regressor.inp, HPARAMS["weight_noise"])])
