"""Parcel-volume forecasting for a sorting hub's inbound docks.

Source: https://stackoverflow.com/questions/68547874 ("Understanding pytorch graph
generation"). The author computed ``z = torch.matmul(x, w) + b`` once, then built a
loss from ``z`` and called ``backward()``; building the loss a second time from the
same ``z`` and calling ``backward()`` again raised "Trying to backward through the
graph a second time", while recomputing ``z`` before the second loss worked. The
answer explains that the loss lines only add new nodes on top of ``z``: the part of
the graph that produces ``z`` is the one the first backward freed.

Reduction: a warehouse forecaster whose per-dock context vector comes from a
trainable dock-embedding projection. The script computes the dock context once,
before the epoch loop (as the author computed ``z`` once), and every step's loss
reads it, so the second optimizer step's backward walks the freed projection graph.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

CONFIG = {
    "n_docks": 6,
    "dock_features": 5,
    "context_dim": 8,
    "window": 14,
    "horizon": 3,
    "hidden": 32,
    "batch_size": 24,
    "epochs": 3,
    "steps_per_epoch": 4,
    "lr": 3e-3,
}


def make_history(cfg, n_series=96):
    """Synthetic daily parcel counts per dock with weekly seasonality."""
    t = torch.arange(cfg["window"] + cfg["horizon"], dtype=torch.float32)
    dock = torch.randint(0, cfg["n_docks"], (n_series,))
    level = 50.0 + 10.0 * torch.rand(n_series, 1)
    season = 8.0 * torch.sin(2 * torch.pi * t / 7.0).unsqueeze(0)
    noise = 2.0 * torch.randn(n_series, t.numel())
    series = (level + season + noise) / 60.0
    return dock, series[:, : cfg["window"]], series[:, cfg["window"]:]


class DockContext(nn.Module):
    """Projects static dock descriptors (doors, conveyor speed, shift pattern...)."""

    def __init__(self, cfg):
        super().__init__()
        self.proj = nn.Linear(cfg["dock_features"], cfg["context_dim"])

    def forward(self, descriptors):
        return torch.tanh(self.proj(descriptors))


class VolumeForecaster(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.encoder = nn.GRU(1, cfg["hidden"], batch_first=True)
        self.head = nn.Sequential(
            nn.Linear(cfg["hidden"] + cfg["context_dim"], cfg["hidden"]),
            nn.ReLU(),
            nn.Linear(cfg["hidden"], cfg["horizon"]),
        )

    def forward(self, window, context):
        _, h = self.encoder(window.unsqueeze(-1))
        return self.head(torch.cat([h[-1], context], dim=-1))


def pinball(pred, target, q=0.6):
    diff = target - pred
    return torch.maximum(q * diff, (q - 1) * diff).mean()


def batches(dock, x, y, batch_size, steps):
    for _ in range(steps):
        idx = torch.randint(0, x.shape[0], (batch_size,))
        yield dock[idx], x[idx], y[idx]


def main(cfg):
    dock_ids, windows, targets = make_history(cfg)
    dock_descriptors = torch.randn(cfg["n_docks"], cfg["dock_features"])

    dock_context = DockContext(cfg)
    forecaster = VolumeForecaster(cfg)
    optimizer = torch.optim.Adam(
        list(dock_context.parameters()) + list(forecaster.parameters()), lr=cfg["lr"]
    )

    dock_table = dock_context(dock_descriptors)

    for epoch in range(cfg["epochs"]):
        running = 0.0
        for dock, window, target in batches(
            dock_ids, windows, targets, cfg["batch_size"], cfg["steps_per_epoch"]
        ):
            pred = forecaster(window, dock_table[dock])
            forecast_loss = pinball(pred, target) + 0.1 * F.mse_loss(pred, target)
            optimizer.zero_grad()
            forecast_loss.backward()
            optimizer.step()
            running += forecast_loss.item()
        print(f"epoch {epoch}: loss {running / cfg['steps_per_epoch']:.4f}")


if __name__ == "__main__":
    main(CONFIG)
