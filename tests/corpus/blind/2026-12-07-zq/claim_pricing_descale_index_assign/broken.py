"""Insurance claim pricing: a frequency/severity network that de-scales its outputs per column.

Source: https://github.com/WUSTL-CSPL/SlowLiDAR/issues/2

The reporter hit "one of the variables needed for gradient computation has been modified
by an inplace operation" and located it at the decoder's de-normalisation,
``x[:, i, :, :] = x[:, i, :, :] * self.target_std_dev[i] + self.target_mean[i]``, written
as a loop of index assignments over output channels; they could not see why it was in
place. (The thread closed with the reporter blaming their torch version.) The assignment
writes into the tensor the previous layer produced; when that layer saved its output for
backward, as a sigmoid or tanh does, the write invalidates it.

Reduction: a motor-insurance pricing model reads numeric rating factors and embedded
categorical ones (vehicle group, region) and predicts two targets min-max scaled to [0, 1]
by a sigmoid head: expected claim count per policy-year and log mean claim severity. The
forward de-scales each output column back to its units with an index assignment, as the
report's decoder does; the losses are a Poisson deviance on the count and an MSE on the log
severity of policies that claimed.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

SETTINGS = {
    "n_policies": 256,
    "n_numeric": 6,
    "cards": {"vehicle_group": 8, "region": 5},
    "emb_dim": 4,
    "hidden": 48,
    "batch_size": 64,
    "lr": 2e-3,
    "severity_weight": 0.5,
}


def make_portfolio(cfg):
    n = cfg["n_policies"]
    numeric = torch.randn(n, cfg["n_numeric"])
    vehicle = torch.randint(0, cfg["cards"]["vehicle_group"], (n,))
    region = torch.randint(0, cfg["cards"]["region"], (n,))
    rate = torch.exp(-2.0 + 0.3 * numeric[:, 0] + 0.1 * vehicle.float() - 0.05 * region.float())
    counts = torch.poisson(rate)
    log_sev = 7.5 + 0.4 * numeric[:, 1] + 0.05 * vehicle.float() + 0.3 * torch.randn(n)
    return numeric, torch.stack([vehicle, region], dim=1), counts, log_sev


class ClaimPricingNet(nn.Module):
    def __init__(self, n_numeric, cards, emb_dim, hidden, out_min, out_range):
        super().__init__()
        self.embeddings = nn.ModuleList([nn.Embedding(c, emb_dim) for c in cards.values()])
        self.trunk = nn.Sequential(
            nn.Linear(n_numeric + emb_dim * len(cards), hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
        )
        self.head = nn.Linear(hidden, 2)
        self.register_buffer("out_min", out_min)
        self.register_buffer("out_range", out_range)

    def forward(self, numeric, cats):
        embs = [emb(cats[:, j]) for j, emb in enumerate(self.embeddings)]
        h = self.trunk(torch.cat([numeric] + embs, dim=1))
        out = torch.sigmoid(self.head(h))
        for i in range(out.shape[1]):
            out[:, i] = out[:, i] * self.out_range[i] + self.out_min[i]
        return out


def pricing_losses(pred, counts, log_sev):
    freq = pred[:, 0].clamp_min(1e-4)
    freq_loss = F.poisson_nll_loss(freq, counts, log_input=False)
    claimed = counts > 0
    sev_loss = F.mse_loss(pred[claimed, 1], log_sev[claimed]) if claimed.any() else pred.sum() * 0.0
    return freq_loss, sev_loss


def main():
    cfg = SETTINGS
    numeric, cats, counts, log_sev = make_portfolio(cfg)
    out_min = torch.tensor([0.0, float(log_sev.min()) - 0.5])
    out_range = torch.tensor([2.0, float(log_sev.max() - log_sev.min()) + 1.0])
    pricer = ClaimPricingNet(cfg["n_numeric"], cfg["cards"], cfg["emb_dim"], cfg["hidden"], out_min, out_range)
    opt = torch.optim.Adam(pricer.parameters(), lr=cfg["lr"])

    perm = torch.randperm(cfg["n_policies"])
    for b, start in enumerate(range(0, cfg["n_policies"], cfg["batch_size"])):
        idx = perm[start : start + cfg["batch_size"]]
        pred = pricer(numeric[idx], cats[idx])
        freq_loss, sev_loss = pricing_losses(pred, counts[idx], log_sev[idx])
        pricing_loss = freq_loss + cfg["severity_weight"] * sev_loss
        opt.zero_grad()
        pricing_loss.backward()
        opt.step()
        print(f"batch {b}: freq {freq_loss.item():.4f}  sev {sev_loss.item():.4f}")


if __name__ == "__main__":
    main()
