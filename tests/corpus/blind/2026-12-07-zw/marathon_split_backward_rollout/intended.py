"""Marathon pacing: a pacing policy rolled out kilometre by kilometre over a course.

Reduced from https://discuss.pytorch.org/t/backwards-through-a-graph-iteratively-and-efficiently/176817
The author rolled a computation out step by step (each value built from the previous
one, y[i] from y[i - 1]) and wanted the gradient at every step as it was produced, so
`backward()` was called inside the rollout loop. Each step's graph contains all the
earlier steps; only with retain_graph=True on every call did the loop run, and slowly.
Without it, the second step's backward walks into the part of the graph that the first
step's backward already freed.

Here the rollout is a race: a pacing network picks the pace of each kilometre from the
course profile and the runner's fatigue, a small physiological model carries fatigue
from one kilometre to the next, and each split is scored against the goal split with
a fatigue penalty. `RaceSimulator.run` calls backward on every split as the race goes
(to log a per-split gradient norm), and the optimizer steps once at the finish.

Corrected: the splits are summed over the race and backward runs once at the finish,
which gives the gradient of the whole rollout that the per-split calls were adding up;
the gradient norm is logged once per race.
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(11)

RACE = {
    "km": 12,
    "goal_pace": 4.5,  # min/km
    "fatigue_weight": 0.05,
    "races": 4,
    "lr": 2e-3,
}


class Pacer(nn.Module):
    """(course features, fatigue) -> pace for the next kilometre, in min/km."""

    def __init__(self, n_course=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_course + 1, 24), nn.Tanh(), nn.Linear(24, 1))

    def forward(self, course_km, fatigue):
        x = torch.cat([course_km, fatigue.unsqueeze(-1)], dim=-1)
        return 4.5 + 0.5 * torch.tanh(self.net(x)).squeeze(-1)


class FatigueModel(nn.Module):
    """Fatigue after a kilometre run at `pace` on a given gradient."""

    def __init__(self):
        super().__init__()
        self.recovery = nn.Parameter(torch.tensor(0.9))
        self.cost = nn.Linear(2, 1)

    def forward(self, fatigue, pace, grade):
        effort = torch.stack([(5.0 - pace) ** 2, grade * (5.0 - pace)], dim=-1)
        return torch.sigmoid(self.recovery) * fatigue + nn.functional.softplus(self.cost(effort)).squeeze(-1)


def make_course(n_runners, km):
    t = torch.linspace(0, 2 * math.pi, km)
    grade = 0.03 * torch.sin(t).expand(n_runners, km) + 0.01 * torch.randn(n_runners, km)
    wind = 0.2 * torch.randn(n_runners, km)
    dist = torch.linspace(0, 1, km).expand(n_runners, km)
    temp = 0.5 + 0.1 * torch.randn(n_runners, 1).expand(n_runners, km)
    return torch.stack([grade, wind, dist, temp], dim=-1)


class RaceSimulator:
    def __init__(self, pacer, fatigue_model, cfg):
        self.pacer = pacer
        self.fatigue_model = fatigue_model
        self.cfg = cfg
        self.split_grad_norms = []

    def grad_norm(self):
        return sum(p.grad.norm().item() for p in self.pacer.parameters() if p.grad is not None)

    def run(self, course):
        n_runners = course.shape[0]
        fatigue = torch.zeros(n_runners)
        race_loss = 0.0
        for k in range(self.cfg["km"]):
            pace = self.pacer(course[:, k], fatigue)
            fatigue = self.fatigue_model(fatigue, pace, course[:, k, 0])
            split_loss = ((pace - self.cfg["goal_pace"]) ** 2).mean() + self.cfg["fatigue_weight"] * fatigue.mean()
            race_loss = race_loss + split_loss
        race_loss.backward()
        self.split_grad_norms.append(self.grad_norm())
        return race_loss.item()


def main():
    cfg = RACE
    pacer = Pacer()
    fatigue_model = FatigueModel()
    optimizer = torch.optim.Adam(list(pacer.parameters()) + list(fatigue_model.parameters()), lr=cfg["lr"])
    sim = RaceSimulator(pacer, fatigue_model, cfg)
    for race in range(cfg["races"]):
        course = make_course(16, cfg["km"])
        optimizer.zero_grad()
        total = sim.run(course)
        optimizer.step()
        print(f"race {race}: split loss sum {total:.4f}")


if __name__ == "__main__":
    main()
