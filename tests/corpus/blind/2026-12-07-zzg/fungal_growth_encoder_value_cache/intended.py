"""Mycelium growth forecasting on agar plates, with an encoder that caches its layer encodings.

Source: https://github.com/pystiche/pystiche/pull/470 (pystiche's MultiLayerEncoder cached the
intermediate encodings of an input keyed by a pseudo-equality key, a ``TensorKey`` computed from
summary statistics of the tensor; the PR notes this gives unexpected results when the encoder is
called with a clone of a previously cached input, and replaces the key by the tensor's identity).

Reduction: a 1-D convolutional encoder over daily plate readings (colony radius, hyphal density,
moisture, temperature) memoises its per-layer encodings on the module, keyed by a fingerprint of
the input's values, so the forecast head and the texture term of one step share one encoding.
Each epoch standardises the same raw readings again: a new tensor with the same values, whose
fingerprint hits the entry stored in the previous epoch. The training setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "seed": 11,
    "plates": 24,
    "days": 14,
    "channels": 4,
    "hidden": 24,
    "horizon": 3,
    "lr": 3e-3,
    "epochs": 4,
    "texture_weight": 0.1,
}


def fingerprint(x):
    return id(x)


class MultiLayerEncoder(nn.Module):
    def __init__(self, channels, hidden):
        super().__init__()
        self.layers = nn.ModuleList([
            nn.Conv1d(channels, hidden, 3, padding=1),
            nn.Conv1d(hidden, hidden, 3, padding=1),
            nn.Conv1d(hidden, hidden, 3, padding=1),
        ])
        self._storage = {}

    def forward(self, x):
        key = fingerprint(x)
        entry = self._storage.get(key)
        if entry is not None and entry[0] is x:
            return entry[1]
        encodings = []
        h = x
        for layer in self.layers:
            h = F.gelu(layer(h))
            encodings.append(h)
        self._storage[key] = (x, encodings)
        return encodings


class GrowthHead(nn.Module):
    def __init__(self, hidden, horizon):
        super().__init__()
        self.proj = nn.Linear(hidden, horizon)

    def forward(self, deep):
        return self.proj(deep[:, :, -1])


def make_readings(cfg):
    days = torch.arange(cfg["days"], dtype=torch.float32)
    rate = 0.5 + torch.rand(cfg["plates"], 1)
    radius = rate * days + 0.3 * torch.randn(cfg["plates"], cfg["days"])
    density = torch.sigmoid(0.4 * days - 2.0) + 0.05 * torch.randn(cfg["plates"], cfg["days"])
    moisture = 0.8 - 0.02 * days + 0.05 * torch.randn(cfg["plates"], cfg["days"])
    temperature = 22.0 + torch.randn(cfg["plates"], cfg["days"])
    readings = torch.stack([radius, density, moisture, temperature], dim=1)
    future = rate * (cfg["days"] + torch.arange(cfg["horizon"], dtype=torch.float32))
    return readings, future


def standardise(readings):
    mean = readings.mean(dim=(0, 2), keepdim=True)
    std = readings.std(dim=(0, 2), keepdim=True)
    return (readings - mean) / std


def texture_term(encodings):
    grams = [e @ e.transpose(1, 2) / e.shape[-1] for e in encodings[:2]]
    return sum(g.pow(2).mean() for g in grams)


def run_epoch(encoder, head, optimizer, readings, future, cfg):
    x = standardise(readings)
    encodings = encoder(x)
    forecast = head(encodings[-1])
    fit = F.mse_loss(forecast, future / 10.0)
    texture = texture_term(encoder(x))
    loss = fit + cfg["texture_weight"] * texture
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def main():
    cfg = CONFIG
    torch.manual_seed(cfg["seed"])
    readings, future = make_readings(cfg)
    encoder = MultiLayerEncoder(cfg["channels"], cfg["hidden"])
    head = GrowthHead(cfg["hidden"], cfg["horizon"])
    optimizer = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        value = run_epoch(encoder, head, optimizer, readings, future, cfg)
        print(f"epoch {epoch} loss {value:.5f}")


if __name__ == "__main__":
    main()
