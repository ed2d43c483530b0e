"""Significant-wave-height forecaster from moored buoy records (LSTM).

Source: https://github.com/sgadgil6/cnslab_fmri/issues/4 -- in the repository's
fMRI LSTM the model kept its LSTM state on ``self.hidden`` (made once in
``__init__`` by ``init_hidden``) and passed it into every forward, storing the new
state back; ``loss.backward()`` failed on the next batch with "Trying to backward
through the graph a second time", and ``retain_graph=True`` ran out of memory.
The fix the reporter posted (merged as PR #5) calls ``self.lstm(x)`` without the
stored state ("you don't need to pass hidden layer state").

Here the same model shape forecasts the next 6 hours of significant wave height
from 24-hour windows of buoy measurements (wave height, period, wind, pressure).
The windows are drawn independently from a synthetic multi-buoy record.
"""
import math

import torch
import torch.nn as nn

torch.manual_seed(3)

CONFIG = dict(n_feat=5, hidden=32, window=24, horizon=6, batch=16, n_batches=10, epochs=2, lr=1e-3)


def synth_buoy_record(n_hours=2000, n_feat=5):
    t = torch.arange(n_hours, dtype=torch.float32)
    swell = 1.5 + 0.8 * torch.sin(2 * math.pi * t / 96) + 0.3 * torch.sin(2 * math.pi * t / 12.4)
    wind = 6 + 3 * torch.sin(2 * math.pi * t / 150 + 1.0) + 0.5 * torch.randn(n_hours)
    hs = swell + 0.08 * wind + 0.05 * torch.randn(n_hours)
    period = 8 + 2 * torch.sin(2 * math.pi * t / 96 + 0.4)
    pressure = 1013 - 4 * torch.sin(2 * math.pi * t / 150)
    feats = torch.stack([hs, period, wind, pressure, torch.cos(2 * math.pi * t / 24)], dim=1)
    feats = (feats - feats.mean(0)) / feats.std(0)
    return feats[:, :n_feat], hs


def sample_windows(feats, hs, cfg):
    starts = torch.randint(0, len(hs) - cfg["window"] - cfg["horizon"], (cfg["batch"],))
    x = torch.stack([feats[s : s + cfg["window"]] for s in starts])
    y = torch.stack([hs[s + cfg["window"] : s + cfg["window"] + cfg["horizon"]] for s in starts])
    return x, y


class SwellLSTM(nn.Module):
    def __init__(self, n_feat, hidden, horizon, batch):
        super().__init__()
        self.hidden_dim = hidden
        self.batch = batch
        self.lstm = nn.LSTM(n_feat, hidden, num_layers=1, batch_first=True)
        self.dropout = nn.Dropout(p=0.1)
        self.head = nn.Linear(hidden, horizon)
        self.hidden = self.init_hidden()

    def init_hidden(self):
        return (torch.randn(1, self.batch, self.hidden_dim), torch.randn(1, self.batch, self.hidden_dim))

    def forward(self, x):
        lstm_out, _ = self.lstm(x)
        last = self.dropout(lstm_out[:, -1, :])
        return self.head(last)


def run_epoch(model, optimizer, criterion, feats, hs, cfg):
    model.train()
    total = 0.0
    for _ in range(cfg["n_batches"]):
        x, y = sample_windows(feats, hs, cfg)
        forecast = model(x)
        hs_loss = criterion(forecast, y)
        optimizer.zero_grad()
        hs_loss.backward()
        optimizer.step()
        total += hs_loss.item()
    return total / cfg["n_batches"]


def main(cfg):
    feats, hs = synth_buoy_record(n_feat=cfg["n_feat"])
    model = SwellLSTM(cfg["n_feat"], cfg["hidden"], cfg["horizon"], cfg["batch"])
    optimizer = torch.optim.RMSprop(model.parameters(), lr=cfg["lr"])
    criterion = nn.SmoothL1Loss()
    for epoch in range(cfg["epochs"]):
        print(f"epoch {epoch}: train {run_epoch(model, optimizer, criterion, feats, hs, cfg):.4f}")


if __name__ == "__main__":
    main(CONFIG)
