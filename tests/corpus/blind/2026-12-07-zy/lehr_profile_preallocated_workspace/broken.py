"""Annealing-lehr temperature profile for blown glassware, zone by zone.

Source: https://stackoverflow.com/questions/55268726/pytorch-why-does-preallocating-memory-cause-trying-to-backward-through-the-gr
The author preallocated an output tensor once, outside the training loop, to
save allocations, and filled it slot by slot with the network's outputs inside
the loop; the first step trained and the second raised "Trying to backward
through the graph a second time". Reduced here to a lehr controller that
predicts the glass temperature at each of the lehr's zones from the piece's
features and the previous zone's prediction, writing each zone into a profile
workspace the trainer allocates once in its constructor.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "n_pieces": 96,
    "n_features": 6,      # wall thickness, mass, entry temp, glass type code, belt speed, ambient
    "n_zones": 8,
    "hidden": 32,
    "batch_size": 24,
    "epochs": 2,
    "lr": 3e-3,
}


def make_pieces(cfg):
    g = torch.Generator().manual_seed(11)
    x = torch.randn(cfg["n_pieces"], cfg["n_features"], generator=g)
    zones = torch.linspace(0.0, 1.0, cfg["n_zones"])
    entry = 0.6 + 0.1 * x[:, 2:3]
    rate = 0.8 + 0.2 * torch.sigmoid(x[:, 0:1] - x[:, 4:5])
    profile = entry * torch.exp(-rate * zones) + 0.02 * torch.randn(cfg["n_pieces"], cfg["n_zones"], generator=g)
    return x, profile


class ZoneCell(nn.Module):
    def __init__(self, n_features, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_features + 2, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, feats, prev_temp, zone_pos):
        pos = torch.full_like(prev_temp, zone_pos)
        return prev_temp + self.body(torch.cat([feats, prev_temp, pos], dim=1))


class LehrTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.cell = ZoneCell(cfg["n_features"], cfg["hidden"])
        self.entry_head = nn.Linear(cfg["n_features"], 1)
        params = list(self.cell.parameters()) + list(self.entry_head.parameters())
        self.optimizer = torch.optim.Adam(params, lr=cfg["lr"])
        self.profile = torch.zeros(cfg["batch_size"], cfg["n_zones"])

    def rollout(self, feats):
        n_zones = self.cfg["n_zones"]
        temp = self.entry_head(feats)
        for z in range(n_zones):
            temp = self.cell(feats, temp, z / (n_zones - 1))
            self.profile[:, z] = temp.squeeze(1)
        return self.profile

    def step(self, feats, target):
        self.optimizer.zero_grad()
        predicted = self.rollout(feats)
        profile_loss = F.mse_loss(predicted, target)
        profile_loss.backward()
        self.optimizer.step()
        return profile_loss.item()


def main():
    torch.manual_seed(0)
    cfg = CONFIG
    x, profile = make_pieces(cfg)
    trainer = LehrTrainer(cfg)
    bs = cfg["batch_size"]
    for epoch in range(cfg["epochs"]):
        order = torch.randperm(cfg["n_pieces"])
        total = 0.0
        for i in range(0, cfg["n_pieces"], bs):
            idx = order[i:i + bs]
            total += trainer.step(x[idx], profile[idx])
        print(f"epoch {epoch}: profile mse {total / (cfg['n_pieces'] // bs):.5f}")


if __name__ == "__main__":
    main()
