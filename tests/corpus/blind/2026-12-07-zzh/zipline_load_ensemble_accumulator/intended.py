"""Zipline trolley load monitoring: an ensemble of small load-cell regressors averaged by a wrapper module.

Source: https://github.com/BorealisAI/advertorch/issues/17

In the report the author wrapped several classifiers in an ``EnsembleModel`` whose
``__init__`` created ``self.out = torch.zeros((1, 110))`` and whose ``forward`` did
``self.out += model(x)`` for every member before dividing by the number of members.
The first gradient computation worked; the second one failed with "Trying to backward
through the graph a second time" although the author called backward only once per
batch. The maintainer's answer builds the ensemble output fresh on every call
(``model_1(data) + model_2(data) + ...``).

This script moves the pattern to training: a zipline operator fits three small MLP
members on windows of load-cell and trolley-speed readings to predict the peak cable
tension of the next run. The members are averaged by an ensemble wrapper that keeps its
running sum as an attribute created in ``__init__``; a small trainer with callbacks runs
the backward inside its ``on_batch`` hook.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "window": 12,          # readings per window (load cell + trolley speed interleaved)
    "channels": 2,
    "hidden": 24,
    "members": 3,
    "batch_size": 16,
    "epochs": 3,
    "batches_per_epoch": 6,
    "lr": 3e-3,
}


def make_runs(n_runs, window, channels, generator):
    """Synthetic zipline runs: rider mass and line sag drive the peak tension."""
    mass = torch.rand(n_runs, 1, generator=generator) * 60 + 40
    sag = torch.rand(n_runs, 1, generator=generator) * 0.5 + 0.5
    t = torch.linspace(0, 1, window).unsqueeze(0)
    load = mass * (1 + 0.3 * torch.sin(6.28 * t)) / 100
    speed = sag * t * 3
    noise = 0.05 * torch.randn(n_runs, window, channels, generator=generator)
    readings = torch.stack([load, speed], dim=-1) + noise
    peak = (mass / 100) * (1.5 + sag) + 0.02 * torch.randn(n_runs, 1, generator=generator)
    return readings.reshape(n_runs, window * channels), peak


class LoadMember(nn.Module):
    def __init__(self, in_dim, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


class TensionEnsemble(nn.Module):
    """Averages the members' tension estimates."""

    def __init__(self, members, batch_size):
        super().__init__()
        self.members = nn.ModuleList(members)

    def forward(self, x):
        out = torch.zeros((x.shape[0], 1))
        for member in self.members:
            out = out + member(x)
        return out / len(self.members)


class Trainer:
    def __init__(self, model, optimizer, callbacks=()):
        self.model = model
        self.optimizer = optimizer
        self.callbacks = list(callbacks)
        self.history = []

    def on_batch(self, readings, peak):
        self.optimizer.zero_grad()
        estimate = self.model(readings)
        tension_loss = F.smooth_l1_loss(estimate, peak)
        tension_loss.backward()
        self.optimizer.step()
        for cb in self.callbacks:
            cb(self, tension_loss.item())
        return tension_loss.item()

    def fit(self, batches, epochs):
        for epoch in range(epochs):
            running = 0.0
            for readings, peak in batches:
                running += self.on_batch(readings, peak)
            self.history.append(running / len(batches))
            print(f"epoch {epoch}: tension loss {self.history[-1]:.4f}")


def log_every(n):
    state = {"seen": 0}

    def callback(trainer, value):
        state["seen"] += 1
        if state["seen"] % n == 0:
            print(f"  batch {state['seen']}: {value:.4f}")

    return callback


def main():
    torch.manual_seed(7)
    gen = torch.Generator().manual_seed(7)
    cfg = CONFIG
    in_dim = cfg["window"] * cfg["channels"]
    batches = [
        make_runs(cfg["batch_size"], cfg["window"], cfg["channels"], gen)
        for _ in range(cfg["batches_per_epoch"])
    ]
    members = [LoadMember(in_dim, cfg["hidden"]) for _ in range(cfg["members"])]
    ensemble = TensionEnsemble(members, cfg["batch_size"])
    optimizer = torch.optim.Adam(ensemble.parameters(), lr=cfg["lr"])
    trainer = Trainer(ensemble, optimizer, callbacks=[log_every(4)])
    trainer.fit(batches, cfg["epochs"])


if __name__ == "__main__":
    main()
