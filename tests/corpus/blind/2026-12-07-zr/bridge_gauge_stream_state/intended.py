"""Railway-bridge deflection forecaster fed window by window from a strain-gauge stream.

Source: https://github.com/MorvanZhou/PyTorch-Tutorial/issues/57
The tutorial's RNN regressor (403) carries ``h_state`` from one training step to
the next and rebinds it with ``h_state = h_state.data`` after each forward. The
reporter removed that line and got "Trying to backward through the graph a
second time"; the answer is that the carried state must be cut from the
previous step's graph (``.data``/``.detach()``), not kept attached.

Reduction: the writer's setting is structural health monitoring of a railway
bridge: mid-span strain gauges sampled while trains cross, a GRU that predicts
the mid-span deflection. The recurrent state is kept on a ``GaugeStream``
object that hands consecutive windows to the trainer and stores the state the
model returns, so it is carried across optimisation steps like the tutorial's
``h_state``.
"""
import math

import torch
import torch.nn as nn

torch.manual_seed(11)

SETTINGS = {
    "n_gauges": 6,
    "hidden": 32,
    "window": 20,
    "n_windows": 24,
    "lr": 2e-3,
    "clip": 1.0,
}


def simulate_crossings(n_steps, n_gauges):
    """Strain at each gauge and the mid-span deflection for a sequence of train passages."""
    t = torch.arange(n_steps, dtype=torch.float32)
    axle_wave = torch.relu(torch.sin(2 * math.pi * t / 37.0)) ** 2
    offsets = torch.linspace(0.0, 1.5, n_gauges)
    strain = torch.stack([torch.roll(axle_wave, int(3 * o)) for o in offsets], dim=-1)
    strain = strain * (1.0 + 0.2 * torch.randn(1, n_gauges)) + 0.05 * torch.randn(n_steps, n_gauges)
    temperature_drift = 0.1 * torch.sin(2 * math.pi * t / 400.0)
    deflection = 0.7 * strain.mean(dim=-1) + temperature_drift + 0.02 * torch.randn(n_steps)
    return strain, deflection.unsqueeze(-1)


class GaugeStream:
    """Serves consecutive windows of one continuous record and keeps the model state between them."""

    def __init__(self, strain, deflection, window):
        self.strain = strain
        self.deflection = deflection
        self.window = window
        self.cursor = 0
        self.state = None

    def __iter__(self):
        self.cursor = 0
        self.state = None
        return self

    def __next__(self):
        end = self.cursor + self.window
        if end > self.strain.shape[0]:
            raise StopIteration
        x = self.strain[self.cursor:end].unsqueeze(0)
        y = self.deflection[self.cursor:end].unsqueeze(0)
        self.cursor = end
        return x, y

    def remember(self, state):
        self.state = state


class DeflectionGRU(nn.Module):
    def __init__(self, n_gauges, hidden):
        super().__init__()
        self.inp = nn.Linear(n_gauges, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 1)

    def forward(self, strain, state):
        z = torch.tanh(self.inp(strain))
        seq, state = self.gru(z, state)
        return self.out(seq), state


def train_on_stream(model, stream, cfg):
    opt = torch.optim.RMSprop(model.parameters(), lr=cfg["lr"])
    mse = nn.MSELoss()
    losses = []
    for x, y in stream:
        pred, new_state = model(x, stream.state)
        stream.remember(new_state.detach())
        window_loss = mse(pred, y)
        opt.zero_grad()
        window_loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg["clip"])
        opt.step()
        losses.append(window_loss.item())
    return losses


def main():
    cfg = SETTINGS
    n_steps = cfg["window"] * cfg["n_windows"]
    strain, deflection = simulate_crossings(n_steps, cfg["n_gauges"])
    model = DeflectionGRU(cfg["n_gauges"], cfg["hidden"])
    stream = GaugeStream(strain, deflection, cfg["window"])
    for sweep in range(2):
        losses = train_on_stream(model, stream, cfg)
        print(f"sweep {sweep}: mean window loss {sum(losses) / len(losses):.5f}")


if __name__ == "__main__":
    main()
