"""Parking-bay occupancy model whose sensor-embedding table evicts silent sensors.

Source: https://github.com/meta-pytorch/torchrec/pull/2836
TorchRec's managed-collision modules evict rarely seen ids during ``forward``
and re-initialise the evicted embedding rows by writing into the table. The PR
reports that with several forward passes before one backward this direct
write raises "one of the variables needed for gradient computation has been
modified by an inplace operation", and changes the re-initialisation to write
through ``.data``.

Reduction: the writer's setting is on-street parking occupancy. Every bay
sensor has a learned row in a managed table; a bay's prediction attends over
all rows (neighbouring bays), so the forward saves the whole table. Each step
runs two forward passes (occupancy now and in 15 minutes) and backpropagates
their summed loss; the table counts the sensors it sees and, every second
call, re-initialises the rows of sensors that reported nothing.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

CFG = {
    "n_bays": 64,
    "active_bays": 44,
    "emb_dim": 16,
    "n_features": 5,
    "hidden": 32,
    "evict_interval": 2,
    "init_std": 0.05,
    "batch": 48,
    "steps": 8,
    "lr": 5e-3,
}


def synth_readings(n, cfg):
    """Features at t and t+15 min for a bay, its id, and occupancy at both times."""
    bay = torch.randint(0, cfg["active_bays"], (n,))
    hour = 24 * torch.rand(n)
    weekday = torch.randint(0, 7, (n,)).float()
    event = (torch.rand(n) < 0.1).float()

    def feats(h):
        return torch.stack([torch.sin(2 * math.pi * h / 24), torch.cos(2 * math.pi * h / 24),
                            weekday / 6.0, event, 0.1 * torch.randn(n)], dim=-1)

    bay_bias = torch.randn(cfg["n_bays"])[bay]
    def occ(h):
        busy = torch.exp(-0.5 * ((h - 13.0) / 3.0) ** 2) + 0.8 * event + 0.5 * bay_bias
        return (busy + 0.3 * torch.randn(n) > 0.6).float()

    return feats(hour), feats(hour + 0.25), bay, occ(hour), occ(hour + 0.25)


class ManagedBayTable(nn.Module):
    def __init__(self, n_bays, dim, evict_interval, init_std):
        super().__init__()
        self.weight = nn.Parameter(init_std * torch.randn(n_bays, dim))
        self.register_buffer("seen", torch.zeros(n_bays))
        self.evict_interval = evict_interval
        self.init_std = init_std
        self.calls = 0

    @torch.no_grad()
    def evict(self):
        silent = (self.seen == 0).nonzero().squeeze(1)
        if silent.numel() > 0:
            self.weight[silent] = self.init_std * torch.randn(silent.numel(), self.weight.shape[1])
        self.seen.zero_()
        return silent

    def forward(self, bay_ids):
        self.calls += 1
        self.seen.index_add_(0, bay_ids, torch.ones(bay_ids.shape[0]))
        return self.weight


class OccupancyNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.bays = ManagedBayTable(cfg["n_bays"], cfg["emb_dim"], cfg["evict_interval"], cfg["init_std"])
        self.query = nn.Linear(cfg["n_features"], cfg["emb_dim"])
        self.head = nn.Sequential(nn.Linear(2 * cfg["emb_dim"] + cfg["n_features"], cfg["hidden"]),
                                  nn.ReLU(), nn.Linear(cfg["hidden"], 1))

    def forward(self, features, bay_ids):
        table = self.bays(bay_ids)
        q = self.query(features)
        attn = torch.softmax(q @ table.T / math.sqrt(table.shape[1]), dim=-1)
        context = attn @ table
        own = table[bay_ids]
        return self.head(torch.cat([own, context, features], dim=-1)).squeeze(-1)


def train(model, data, cfg):
    feats_now, feats_next, bay, occ_now, occ_next = data
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    for step in range(cfg["steps"]):
        idx = torch.arange(step * cfg["batch"], (step + 1) * cfg["batch"])
        logit_now = model(feats_now[idx], bay[idx])
        logit_next = model(feats_next[idx], bay[idx])
        loss_now = F.binary_cross_entropy_with_logits(logit_now, occ_now[idx])
        loss_next = F.binary_cross_entropy_with_logits(logit_next, occ_next[idx])
        opt.zero_grad()
        (loss_now + loss_next).backward()
        opt.step()
        if model.bays.calls % cfg["evict_interval"] == 0:
            model.bays.evict()
        print(f"step {step}: now {loss_now.item():.3f} next {loss_next.item():.3f}")


def main():
    data = synth_readings(CFG["batch"] * CFG["steps"], CFG)
    model = OccupancyNet(CFG)
    train(model, data, CFG)


if __name__ == "__main__":
    main()
