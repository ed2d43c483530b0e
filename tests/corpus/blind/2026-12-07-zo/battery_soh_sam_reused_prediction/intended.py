"""Battery state-of-health regression trained with sharpness-aware minimisation (SAM).

Source: https://github.com/debcaldarola/fedsam/issues/6 -- a FedSAM user asked how to
"keep back propagation twice without reporting errors": the client computed
``pred = model(image)`` once and used that same ``pred`` for the loss at the perturbed
weights of SAM's second step, which raised "Trying to backward through the graph a
second time"; writing the second loss on a fresh ``model(x)`` made it work.

Reduction: the FedSAM client is replaced by one SoH regressor over per-cycle
charge/discharge summaries (voltage, current, temperature statistics) of synthetic
cells; the two SAM steps are hand-written helpers around an Adam base optimizer, and the
loss helper is called twice, both times on the prediction of the unperturbed forward.
"""
import torch
import torch.nn as nn

torch.manual_seed(7)

CONFIG = {
    "n_cells": 96,
    "n_cycles": 12,
    "n_feats": 6,
    "hidden": 32,
    "batch_size": 24,
    "lr": 1e-3,
    "rho": 0.05,
    "epochs": 2,
}


def make_cells(cfg):
    """Synthetic cycling data: per-cycle features and a state of health in [0.7, 1.0]."""
    feats = torch.randn(cfg["n_cells"], cfg["n_cycles"], cfg["n_feats"])
    fade = torch.linspace(0.0, 1.0, cfg["n_cycles"]).view(1, -1, 1)
    feats = feats + 0.3 * fade
    soh = 1.0 - 0.3 * torch.sigmoid(feats[:, -3:, :2].mean(dim=(1, 2)))
    return feats, soh.unsqueeze(1)


class SoHRegressor(nn.Module):
    def __init__(self, n_feats, hidden):
        super().__init__()
        self.cycle_enc = nn.Sequential(nn.Linear(n_feats, hidden), nn.GELU())
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden, hidden // 2), nn.GELU(), nn.Linear(hidden // 2, 1))

    def forward(self, cycles):
        h = self.cycle_enc(cycles)
        _, last = self.gru(h)
        return torch.sigmoid(self.head(last[-1]))


def soh_loss(pred, target):
    return nn.functional.smooth_l1_loss(pred, target, beta=0.05)


@torch.no_grad()
def ascend(model, rho):
    """SAM first step: move the weights to the worst point of the rho-ball."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = torch.norm(torch.stack([g.norm(2) for g in grads]), 2)
    perturb = {}
    for p in model.parameters():
        if p.grad is None:
            continue
        e = p.grad * (rho / (norm + 1e-12))
        p.add_(e)
        perturb[p] = e
    return perturb


@torch.no_grad()
def descend_back(perturb):
    for p, e in perturb.items():
        p.sub_(e)


def sam_step(model, base_opt, cycles, soh, rho):
    base_opt.zero_grad()
    pred = model(cycles)
    loss = soh_loss(pred, soh)
    loss.backward()
    perturb = ascend(model, rho)

    base_opt.zero_grad()
    sharp_loss = soh_loss(model(cycles), soh)
    sharp_loss.backward()
    descend_back(perturb)
    base_opt.step()
    return loss.item(), sharp_loss.item()


def main(cfg):
    feats, soh = make_cells(cfg)
    model = SoHRegressor(cfg["n_feats"], cfg["hidden"])
    base_opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    n = feats.shape[0]
    for epoch in range(cfg["epochs"]):
        order = torch.randperm(n)
        for start in range(0, n, cfg["batch_size"]):
            idx = order[start:start + cfg["batch_size"]]
            plain, sharp = sam_step(model, base_opt, feats[idx], soh[idx], cfg["rho"])
        print(f"epoch {epoch}: loss {plain:.4f} sharp {sharp:.4f}")


if __name__ == "__main__":
    main(CONFIG)
