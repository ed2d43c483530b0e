"""Hourly PM2.5 forecasting with a GRU whose hidden state lives on the module.

Source: https://discuss.pytorch.org/t/how-to-initialize-hidden-state-in-gru/184389
The author asked where to initialise a GRU's hidden state and did it inside
``forward``, keeping it on ``self.hidden`` and feeding it back on the next call.
The reply pointed out that the computation graph stays attached to
``self.hidden``, so the next backward tries to run through earlier iterations.

Reduction: an air-quality station network (pollutant and weather channels per
hour) forecast 6 hours ahead by a GRU + linear head. The model keeps its hidden
state on ``self.hidden`` between batches, as in the report; the training loop is
an ordinary batch loop with Adam.
"""
import torch
import torch.nn as nn

torch.manual_seed(7)

CONFIG = {
    "n_stations": 96,
    "window": 24,
    "horizon": 6,
    "channels": ["pm25", "pm10", "no2", "o3", "temp", "humidity", "wind"],
    "hidden": 32,
    "batch_size": 16,
    "epochs": 2,
    "lr": 2e-3,
}


def make_station_data(cfg):
    n, t, c = cfg["n_stations"], cfg["window"] + cfg["horizon"], len(cfg["channels"])
    hours = torch.arange(t, dtype=torch.float32)
    diurnal = torch.sin(2 * torch.pi * hours / 24.0).view(1, t, 1)
    base = torch.rand(n, 1, c) * 2.0
    series = base + 0.5 * diurnal + 0.1 * torch.randn(n, t, c)
    x = series[:, : cfg["window"], :]
    y = series[:, cfg["window"]:, 0]
    return x, y


def standardise(x):
    mean = x.mean(dim=(0, 1), keepdim=True)
    std = x.std(dim=(0, 1), keepdim=True) + 1e-6
    return (x - mean) / std


class AirQualityGRU(nn.Module):
    def __init__(self, n_channels, hidden, horizon):
        super().__init__()
        self.hidden_size = hidden
        self.gru = nn.GRU(n_channels, hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, horizon))
        self.hidden = None

    def init_hidden(self, batch_size):
        return torch.zeros(1, batch_size, self.hidden_size)

    def forward(self, x):
        if self.hidden is None or self.hidden.size(1) != x.size(0):
            self.hidden = self.init_hidden(x.size(0))
        out, hidden = self.gru(x, self.hidden)
        self.hidden = hidden.detach()
        return self.head(out[:, -1, :])


def batches(x, y, batch_size):
    order = torch.randperm(x.size(0))
    for start in range(0, x.size(0) - batch_size + 1, batch_size):
        idx = order[start:start + batch_size]
        yield x[idx], y[idx]


def main(cfg=CONFIG):
    x, y = make_station_data(cfg)
    x = standardise(x)
    forecaster = AirQualityGRU(len(cfg["channels"]), cfg["hidden"], cfg["horizon"])
    optimizer = torch.optim.Adam(forecaster.parameters(), lr=cfg["lr"])
    criterion = nn.SmoothL1Loss()

    for epoch in range(cfg["epochs"]):
        running = 0.0
        for step, (xb, yb) in enumerate(batches(x, y, cfg["batch_size"])):
            optimizer.zero_grad()
            pred = forecaster(xb)
            loss = criterion(pred, yb)
            loss.backward()
            optimizer.step()
            running += loss.item()
        print(f"epoch {epoch}: mean loss {running / (step + 1):.4f}")


if __name__ == "__main__":
    main()
