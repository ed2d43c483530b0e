"""Dragon-boat stroke-rate planning with a learned crew-synchrony model, trained in two phases per step.

Source: https://github.com/pytorch/xla/issues/1961 ("Unable to backward two losses": two losses
whose graphs share one tensor, ``gen``; the first backward frees the shared part, and the second
fails with "Trying to backward through the graph a second time". The maintainer's answer: the
behaviour is normal PyTorch; pass ``gen.detach()`` as the input where the other model only needs
its value, or retain the graph).

Reduction: a pacer network plans a stroke-rate profile over the race segments from the crew's
per-paddler measurements. Each step has two phases sharing the planned profile, kept in a
dictionary between them: first the synchrony model is fitted to the synchrony the crew showed at
that pace, then the pacer is updated to lower the predicted synchrony error while keeping a fast,
smooth profile. The first phase's backward runs through the pacer's graph. The training setting is
the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SETUP = {
    "seed": 5,
    "crews": 32,
    "paddlers": 10,
    "segments": 8,
    "hidden": 48,
    "steps": 6,
    "pacer_lr": 2e-3,
    "sync_lr": 5e-3,
    "smooth_weight": 0.05,
    "speed_weight": 0.2,
}


class Pacer(nn.Module):
    def __init__(self, paddlers, segments, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2 * paddlers, hidden), nn.Tanh(), nn.Linear(hidden, segments))

    def forward(self, crew):
        return 60.0 + 20.0 * torch.sigmoid(self.body(crew))


class SyncModel(nn.Module):
    def __init__(self, paddlers, segments, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * paddlers + segments, hidden), nn.ReLU(), nn.Linear(hidden, segments))

    def forward(self, pace, crew):
        z = torch.cat([(pace - 70.0) / 10.0, crew], dim=1)
        return F.softplus(self.net(z))


def measured_sync(pace, crew, paddlers):
    spread = crew[:, :paddlers].std(dim=1, keepdim=True)
    strength = crew[:, paddlers:].mean(dim=1, keepdim=True)
    return spread * (pace / 70.0).pow(2) + 0.1 * (pace - 70.0 - 5.0 * strength).abs() / 10.0


def make_crews(cfg):
    lengths = 1.0 + 0.15 * torch.randn(cfg["crews"], cfg["paddlers"])
    strengths = 0.5 * torch.randn(cfg["crews"], cfg["paddlers"])
    return torch.cat([lengths, strengths], dim=1)


def fit_sync_phase(carry, crew, sync_model, sync_opt, cfg):
    pace = carry["pace"]
    observed = measured_sync(pace.detach(), crew, cfg["paddlers"])
    sync_opt.zero_grad()
    sync_loss = F.mse_loss(sync_model(pace, crew), observed)
    sync_loss.backward()
    sync_opt.step()
    return sync_loss.item()


def plan_phase(carry, crew, sync_model, pacer_opt, cfg):
    pace = carry["pace"]
    predicted = sync_model(pace, crew)
    smooth = (pace[:, 1:] - pace[:, :-1]).pow(2).mean()
    speed = (80.0 - pace).mean() / 10.0
    plan_loss = predicted.mean() + cfg["smooth_weight"] * smooth + cfg["speed_weight"] * speed
    pacer_opt.zero_grad()
    plan_loss.backward()
    pacer_opt.step()
    return plan_loss.item()


def main():
    cfg = SETUP
    torch.manual_seed(cfg["seed"])
    crew = make_crews(cfg)
    pacer = Pacer(cfg["paddlers"], cfg["segments"], cfg["hidden"])
    sync_model = SyncModel(cfg["paddlers"], cfg["segments"], cfg["hidden"])
    pacer_opt = torch.optim.Adam(pacer.parameters(), lr=cfg["pacer_lr"])
    sync_opt = torch.optim.Adam(sync_model.parameters(), lr=cfg["sync_lr"])
    for step in range(cfg["steps"]):
        carry = {"pace": pacer(crew)}
        s = fit_sync_phase(carry, crew, sync_model, sync_opt, cfg)
        p = plan_phase(carry, crew, sync_model, pacer_opt, cfg)
        print(f"step {step} sync {s:.5f} plan {p:.5f}")


if __name__ == "__main__":
    main()
