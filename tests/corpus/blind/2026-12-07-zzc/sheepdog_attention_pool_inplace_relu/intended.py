"""Sheep-dog trial scoring: predict the judge's points deducted per phase from GPS tracks of dog and flock.

Source: https://github.com/dayu11/Gradient-Embedding-Perturbation/issues/2
("There is an unexpected error with the code under torch 1.12.1. How can I fix it?"). Training the
repository's network under torch 1.12 failed in backward at a ReLU; the maintainer answered that it
was "caused by the inplace operations" and updated the code to drop them.

Reduction: a herding-trial scorer embeds each time step of a run (dog and flock-centre position and
velocity, flock spread, distance to the next gate) and pools the steps with attention before
regressing the points the judge took off in outrun, lift, fetch, drive and pen. The pooling helper
scores the embedded steps with a linear attention head and then rectifies the same embedded tensor
with an activation module built with inplace=True.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

PHASES = ("outrun", "lift", "fetch", "drive", "pen")

HPARAMS = {
    "n_runs": 96,
    "steps_per_run": 40,
    "n_track_features": 10,
    "hidden": 48,
    "batch_size": 16,
    "epochs": 3,
    "lr": 3e-3,
}


def simulate_trial_runs(n_runs, steps, n_feat, gen):
    tracks = torch.randn(n_runs, steps, n_feat, generator=gen)
    drift = tracks[:, :, :4].abs().mean(1)
    spread = tracks[:, :, 8].abs().mean(1, keepdim=True)
    deductions = torch.cat([drift, spread], dim=1) * 4.0
    deductions = deductions + 0.3 * torch.randn(n_runs, len(PHASES), generator=gen)
    return tracks, deductions.clamp(min=0.0)


class RunScorer(nn.Module):
    def __init__(self, n_feat, hidden, n_phases):
        super().__init__()
        self.embed = nn.Linear(n_feat, hidden)
        self.attn = nn.Linear(hidden, 1)
        self.act = nn.ReLU()
        self.phase_head = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, n_phases))

    def pool(self, h):
        weights = torch.softmax(self.attn(h), dim=1)
        h = self.act(h)
        return (weights * h).sum(dim=1)

    def forward(self, tracks):
        h = self.embed(tracks)
        return self.phase_head(self.pool(h))


class TrialTrainer:
    def __init__(self, scorer, hp):
        self.scorer = scorer
        self.hp = hp
        self.opt = torch.optim.AdamW(scorer.parameters(), lr=hp["lr"], weight_decay=1e-4)

    def fit_epoch(self, tracks, deductions):
        self.scorer.train()
        order = torch.randperm(tracks.shape[0])
        total = 0.0
        for start in range(0, len(order), self.hp["batch_size"]):
            idx = order[start : start + self.hp["batch_size"]]
            pred = self.scorer(tracks[idx])
            deduction_loss = F.smooth_l1_loss(pred, deductions[idx])
            self.opt.zero_grad()
            deduction_loss.backward()
            self.opt.step()
            total += deduction_loss.item() * len(idx)
        return total / len(order)

    @torch.no_grad()
    def phase_errors(self, tracks, deductions):
        self.scorer.eval()
        err = (self.scorer(tracks) - deductions).abs().mean(0)
        return dict(zip(PHASES, err.tolist()))


def main():
    torch.manual_seed(5)
    gen = torch.Generator().manual_seed(5)
    tracks, deductions = simulate_trial_runs(
        HPARAMS["n_runs"], HPARAMS["steps_per_run"], HPARAMS["n_track_features"], gen
    )
    held_tracks, held_deductions = simulate_trial_runs(24, HPARAMS["steps_per_run"], HPARAMS["n_track_features"], gen)

    scorer = RunScorer(HPARAMS["n_track_features"], HPARAMS["hidden"], len(PHASES))
    trainer = TrialTrainer(scorer, HPARAMS)
    for epoch in range(HPARAMS["epochs"]):
        loss = trainer.fit_epoch(tracks, deductions)
        errors = trainer.phase_errors(held_tracks, held_deductions)
        print(f"epoch {epoch}: train {loss:.3f} | " + ", ".join(f"{k} {v:.2f}" for k, v in errors.items()))


if __name__ == "__main__":
    main()
