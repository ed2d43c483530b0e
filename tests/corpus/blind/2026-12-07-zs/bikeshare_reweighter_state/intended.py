"""Bicycle-share demand regressor trained with per-sample weights kept on a reweighting object.

Source: https://discuss.pytorch.org/t/trying-to-backward-through-the-graph-a-second-time-or-directly-access-saved-tensors-after-they-have-already-been-freed/176686
The thread reports "Trying to backward through the graph a second time" in a boosting loop: the
per-sample weights that scale the loss were recomputed from the model's predictions and carried
from one round to the next, so each weighted loss reached back into a graph an earlier backward
had already freed. The fix given is to cut the weights from the graph (clone/detach them, or
compute them without autograd) before they are reused.

Reduction: a station-hour demand MLP with an error-driven reweighter (hard station-hours get more
weight next epoch). The reweighter stores the weights on itself at the start of each epoch from a
full pass of the model; the next epoch's weighted Poisson loss indexes into them batch by batch.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "n_rows": 128,
    "n_stations": 12,
    "emb_dim": 6,
    "batch_size": 64,
    "epochs": 3,
    "lr": 5e-3,
    "temperature": 2.0,
}


def synth_trips(cfg, gen):
    n = cfg["n_rows"]
    station = torch.randint(0, cfg["n_stations"], (n,), generator=gen)
    hour = torch.randint(0, 24, (n,), generator=gen).float()
    temp_c = 8 + 14 * torch.rand(n, generator=gen)
    rain = (torch.rand(n, generator=gen) < 0.2).float()
    rush = torch.exp(-((hour - 8) ** 2) / 6) + torch.exp(-((hour - 17.5) ** 2) / 6)
    rate = torch.exp(1.0 + 1.2 * rush + 0.04 * temp_c - 0.8 * rain + 0.05 * station.float())
    trips = torch.poisson(rate, generator=gen)
    feats = torch.stack([torch.sin(hour / 24 * 6.283), torch.cos(hour / 24 * 6.283), temp_c / 20, rain], dim=1)
    return station, feats, trips


class DemandNet(nn.Module):
    def __init__(self, n_stations, emb_dim, n_feats=4, hidden=32):
        super().__init__()
        self.station_emb = nn.Embedding(n_stations, emb_dim)
        self.mlp = nn.Sequential(nn.Linear(emb_dim + n_feats, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, station, feats):
        return self.mlp(torch.cat([self.station_emb(station), feats], dim=1)).squeeze(1)


class ErrorReweighter:
    """Gives station-hours the model gets wrong more weight in the next epoch."""

    def __init__(self, n_rows, temperature):
        self.weights = torch.ones(n_rows)
        self.temperature = temperature

    @torch.no_grad()
    def refresh(self, model, station, feats, trips):
        log_rate = model(station, feats)
        err = F.poisson_nll_loss(log_rate, trips, reduction="none")
        w = torch.softmax(err / self.temperature, dim=0) * len(err)
        self.weights = w

    def batch_weights(self, idx):
        return self.weights[idx]


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(3)
    station, feats, trips = synth_trips(CONFIG, gen)
    model = DemandNet(CONFIG["n_stations"], CONFIG["emb_dim"])
    optimizer = torch.optim.Adam(model.parameters(), lr=CONFIG["lr"])
    reweighter = ErrorReweighter(CONFIG["n_rows"], CONFIG["temperature"])
    bs = CONFIG["batch_size"]
    for epoch in range(CONFIG["epochs"]):
        reweighter.refresh(model, station, feats, trips)
        order = torch.randperm(CONFIG["n_rows"], generator=gen)
        for start in range(0, CONFIG["n_rows"], bs):
            idx = order[start:start + bs]
            log_rate = model(station[idx], feats[idx])
            per_row = F.poisson_nll_loss(log_rate, trips[idx], reduction="none")
            demand_loss = (reweighter.batch_weights(idx) * per_row).mean()
            optimizer.zero_grad()
            demand_loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: weighted poisson nll {demand_loss.item():.3f}")


if __name__ == "__main__":
    main()
