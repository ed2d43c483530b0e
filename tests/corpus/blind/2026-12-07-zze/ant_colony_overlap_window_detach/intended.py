"""Ant-colony foraging: predict the food each forager brings back per tick from its sensor trace,
with truncated backpropagation through time over overlapping, strided windows.

Source: https://github.com/pytorch/pytorch/issues/2512 ("detach_() variant that affects all past
uses too"). The report: ``detach_()`` only changes the tensor it is called on; earlier uses of that
tensor in the graph still lead back through it, which bites "when doing BPTT and reusing some of the
steps (say you do BPTT over 20 steps with stride of 2 steps)". The reduction keeps that setting: a
GRU cell rolls over a colony's sensor stream (pheromone, trail density, nest distance), a window of
WINDOW ticks is back-propagated every STRIDE ticks, and after each window the state at the window's
start is ``detach_()``-ed to cut the history. The next window reuses ticks of the previous one whose
graph the first backward already freed, so its backward fails.
"""
import torch
import torch.nn as nn

torch.manual_seed(7)

CONFIG = {
    "n_foragers": 16,
    "n_sensors": 5,
    "hidden": 24,
    "ticks": 40,
    "window": 8,
    "stride": 4,
    "lr": 3e-3,
}


def make_colony_stream(cfg):
    """Synthetic sensor traces and food returned per tick for a batch of foragers."""
    t = torch.arange(cfg["ticks"], dtype=torch.float32)
    phase = torch.rand(cfg["n_foragers"], 1) * 6.28
    pheromone = torch.sin(0.3 * t + phase)
    trail = torch.cos(0.15 * t + 0.5 * phase)
    nest_dist = torch.rand(cfg["n_foragers"], cfg["ticks"]).cumsum(1) / cfg["ticks"]
    noise = 0.1 * torch.randn(cfg["n_foragers"], cfg["ticks"], 2)
    sensors = torch.stack([pheromone, trail, nest_dist], dim=-1)
    sensors = torch.cat([sensors, noise], dim=-1)  # (F, T, 5)
    food = (0.6 * pheromone.clamp(min=0) + 0.3 * trail - 0.2 * nest_dist).unsqueeze(-1)
    return sensors.transpose(0, 1), food.transpose(0, 1)  # time-major


class ForagerTracker(nn.Module):
    def __init__(self, n_sensors, hidden):
        super().__init__()
        self.encode = nn.Linear(n_sensors, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.readout = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def step(self, sensors_t, h):
        return self.cell(torch.relu(self.encode(sensors_t)), h)

    def predict(self, h):
        return self.readout(h)


def window_loss(tracker, sensors, states, food, start, stop):
    h = states[start].detach()
    preds = []
    for k in range(start, stop):
        h = tracker.step(sensors[k], h)
        preds.append(tracker.predict(h))
    return nn.functional.mse_loss(torch.stack(preds), food[start:stop])


def train_stream(tracker, optim, sensors, food, cfg):
    h = torch.zeros(sensors.shape[1], cfg["hidden"])
    states = [h]
    history = []
    for t in range(cfg["ticks"]):
        with torch.no_grad():
            states.append(tracker.step(sensors[t], states[-1]))
        stop = t + 1
        start = stop - cfg["window"]
        if start < 0 or (stop - cfg["window"]) % cfg["stride"] != 0:
            continue
        forage_loss = window_loss(tracker, sensors, states, food, start, stop)
        optim.zero_grad()
        forage_loss.backward()
        optim.step()
        history.append(forage_loss.item())
    return history


def main():
    cfg = CONFIG
    sensors, food = make_colony_stream(cfg)
    tracker = ForagerTracker(cfg["n_sensors"], cfg["hidden"])
    optim = torch.optim.Adam(tracker.parameters(), lr=cfg["lr"])
    for epoch in range(3):
        history = train_stream(tracker, optim, sensors, food, cfg)
        print(f"epoch {epoch}: mean window loss {sum(history) / len(history):.4f}")


if __name__ == "__main__":
    main()
