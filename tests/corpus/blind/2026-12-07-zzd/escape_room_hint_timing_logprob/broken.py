"""Escape-room puzzle hinting: predict how many minutes a team will stall on the current puzzle, so the
game master can time the next hint.

Source: https://github.com/pytorch/pytorch/issues/5954 -- the author backpropagates through the
parameters of a (multivariate) normal, with the loss the negative log-probability of a target,
``loss = -m.log_prob(target)``, and finds that ``loss.backward()`` will not run because the loss is
not a scalar (the log-probability comes back with one entry per element).

Reduction: a stall-time model reads a team's progress features (puzzles solved, minutes elapsed,
hints already used, wrong code attempts, team size) and outputs the mean and scale of a Normal over
log-minutes until the team solves the current puzzle; the loss is the negative log-probability of the
observed stall times, handed to a small fitting loop as a per-team tensor.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal

torch.manual_seed(5)

ROOM = {"features": 8, "teams": 120, "batch": 24, "epochs": 2, "lr": 4e-3}


def game_logs(n, d):
    progress = torch.randn(n, d)
    w = torch.linspace(-0.6, 0.6, d)
    log_stall = 1.8 + progress @ w + 0.25 * torch.randn(n)
    return progress, log_stall


class StallTimeModel(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, progress):
        mu, raw_scale = self.net(progress).unbind(-1)
        return Normal(mu, F.softplus(raw_scale) + 1e-3)


def fit(model, optimizer, batches, loss_fn, epochs):
    for epoch in range(epochs):
        running = 0.0
        for progress, log_stall in batches():
            optimizer.zero_grad()
            stall_nll = loss_fn(model, progress, log_stall)
            stall_nll.backward()
            optimizer.step()
            running += float(stall_nll.detach().sum())
        print(f"epoch {epoch}: stall nll {running:.3f}")


def negative_log_likelihood(model, progress, log_stall):
    dist = model(progress)
    return -dist.log_prob(log_stall)


def main():
    progress, log_stall = game_logs(ROOM["teams"], ROOM["features"])

    def batches():
        order = torch.randperm(ROOM["teams"])
        for i in range(0, ROOM["teams"], ROOM["batch"]):
            idx = order[i:i + ROOM["batch"]]
            yield progress[idx], log_stall[idx]

    hint_model = StallTimeModel(ROOM["features"])
    optimizer = torch.optim.Adam(hint_model.parameters(), lr=ROOM["lr"])
    fit(hint_model, optimizer, batches, negative_log_likelihood, ROOM["epochs"])


if __name__ == "__main__":
    main()
