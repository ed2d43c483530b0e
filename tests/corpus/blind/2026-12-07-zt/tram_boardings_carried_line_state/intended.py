"""Tram passenger flow: boardings per stop along a line, one service day at a time.

Source: https://stackoverflow.com/questions/48274929 ("Pytorch - RuntimeError: Trying to backward
through the graph a second time, but the buffers have already been freed"). The author trained a
recurrent model batch after batch and kept the recurrent state from one batch to the next; the
answer: the state is not detached or repackaged between batches, so the second
``loss.backward()`` tries to go back through the first batch's graph, which was already freed.

Reduction: a GRU cell walks the stops of a tram line and predicts boardings at the next stop from
the current stop's counts, weather and calendar features. The line state at the last stop of one
day is handed to the first stop of the next day (depot carry-over), one optimizer step per day.
"""
import torch
import torch.nn as nn

torch.manual_seed(7)

CONFIG = {
    "n_stops": 12,
    "n_days": 6,
    "n_lines": 8,
    "hidden": 24,
    "lr": 3e-3,
    "epochs": 3,
}


def synthetic_days(cfg):
    """Counts per (day, stop, line) with a morning peak and a weather covariate."""
    days, stops, lines = cfg["n_days"], cfg["n_stops"], cfg["n_lines"]
    stop_profile = torch.sin(torch.linspace(0, 3.1, stops)).unsqueeze(0).unsqueeze(-1)
    weather = torch.rand(days, 1, lines)
    base = 40 + 25 * stop_profile - 10 * weather
    counts = (base + 4 * torch.randn(days, stops, lines)).clamp(min=0)
    calendar = torch.stack([torch.full((stops, lines), float(d % 7 >= 5)) for d in range(days)])
    feats = torch.stack([counts / 60.0, weather.expand(-1, stops, -1), calendar], dim=-1)
    return feats, counts / 60.0


class LineStateModel(nn.Module):
    def __init__(self, n_feat, hidden):
        super().__init__()
        self.embed = nn.Linear(n_feat, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.readout = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def init_state(self, n_lines):
        return torch.zeros(n_lines, self.cell.hidden_size)

    def forward(self, day_feats, state):
        preds = []
        for s in range(day_feats.shape[0] - 1):
            state = self.cell(torch.relu(self.embed(day_feats[s])), state)
            preds.append(self.readout(state).squeeze(-1))
        return torch.stack(preds), state


def run_day(model, feats, targets, state, criterion):
    preds, state = model(feats, state)
    loss = criterion(preds, targets[1:])
    return loss, state


def main(cfg=CONFIG):
    feats, targets = synthetic_days(cfg)
    model = LineStateModel(feats.shape[-1], cfg["hidden"])
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    criterion = nn.SmoothL1Loss()

    for epoch in range(cfg["epochs"]):
        state = model.init_state(cfg["n_lines"])
        running = 0.0
        for day in range(cfg["n_days"]):
            optimizer.zero_grad()
            flow_loss, state = run_day(model, feats[day], targets[day], state, criterion)
            state = state.detach()
            flow_loss.backward()
            optimizer.step()
            running += flow_loss.item()
        print(f"epoch {epoch} mean day loss {running / cfg['n_days']:.4f}")


if __name__ == "__main__":
    main()
