"""Alpine ski run timing: per-section split times capped by photocell readings.

Source: https://github.com/pytorch/pytorch/issues/24853 ("Run time error with backward() after
upgrading to pytorch 1.2.0"). The author computed a tensor from a parameter and then overwrote
the entries selected by a boolean mask with ``torch.min`` of those entries and a second tensor,
``bb[a != 0] = torch.min(bb[a != 0], c[a != 0])``, and backward failed with "modified by an
inplace operation". The maintainers explained that the masked assignment is an in-place
``index_put_`` on a tensor autograd still needs.

Reduction: a split-time regressor predicts log-durations of the course sections of a giant-slalom
run; ``exp`` turns them into seconds (autograd keeps that output for its backward). Sections that
have a photocell reading are then capped at the reading with the same masked ``torch.min``
assignment, which overwrites the saved output of ``exp``.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

CONFIG = {
    "n_runs": 96,
    "n_features": 6,        # gate count, vertical drop, pitch, snow temp, bib, wax index
    "n_sections": 5,
    "hidden": 32,
    "lr": 3e-3,
    "epochs": 4,
    "batch_size": 24,
    "section_weight": 0.3,
}


def make_runs(cfg):
    feats = torch.randn(cfg["n_runs"], cfg["n_features"])
    mix = torch.randn(cfg["n_features"], cfg["n_sections"]) * 0.2
    sections = 9.0 + 2.0 * torch.sigmoid(feats @ mix) + 0.1 * torch.randn(cfg["n_runs"], cfg["n_sections"])
    has_cell = torch.rand(cfg["n_runs"], cfg["n_sections"]) < 0.4
    cell = sections + 0.05 * torch.randn_like(sections)
    return feats, sections, has_cell, cell


class SplitTimeNet(nn.Module):
    def __init__(self, n_features, n_sections, hidden):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(n_features, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
        )
        self.log_time = nn.Linear(hidden, n_sections)
        nn.init.constant_(self.log_time.bias, 2.3)

    def forward(self, x):
        return self.log_time(self.body(x))


def section_seconds(model, feats, has_cell, cell):
    seconds = torch.exp(model(feats))
    seconds[has_cell] = torch.min(seconds[has_cell], cell[has_cell])
    return seconds


def run_losses(seconds, sections, weight):
    total_pred = seconds.sum(dim=1)
    total_true = sections.sum(dim=1)
    run_loss = F.smooth_l1_loss(total_pred, total_true) + weight * F.mse_loss(seconds, sections)
    return run_loss


def main(cfg):
    feats, sections, has_cell, cell = make_runs(cfg)
    timer = SplitTimeNet(cfg["n_features"], cfg["n_sections"], cfg["hidden"])
    optimizer = torch.optim.Adam(timer.parameters(), lr=cfg["lr"])
    n = cfg["n_runs"]
    for epoch in range(cfg["epochs"]):
        order = torch.randperm(n)
        for start in range(0, n, cfg["batch_size"]):
            idx = order[start:start + cfg["batch_size"]]
            seconds = section_seconds(timer, feats[idx], has_cell[idx], cell[idx])
            run_loss = run_losses(seconds, sections[idx], cfg["section_weight"])
            optimizer.zero_grad()
            run_loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: run loss {run_loss.item():.4f}")


if __name__ == "__main__":
    main(CONFIG)
