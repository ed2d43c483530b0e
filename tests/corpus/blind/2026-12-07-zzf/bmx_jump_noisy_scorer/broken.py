"""BMX dirt-jump scoring: a judge model that scores the take-off and the landing of each jump.

Source: https://github.com/pytorch/pytorch/issues/11742

The report: a NoisyNet-style linear layer whose forward computes
``self.weight + self.noise1 * self.eps_weight.normal_()``, ``eps_weight`` being a
registered buffer resampled in place at every call, failed once the layer was run
more than once (there under DataParallel). This script keeps that layer as the
reporter wrote it and uses it as the scoring head of a BMX judge model. The head
is called twice per step, once on the take-off window and once on the landing
window of the same jumps, before a single backward: the second call resamples in
place the noise buffer that the first call's product saved for the backward.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "n_jumps": 64,
    "window": 10,
    "channels": 6,  # pitch, roll, yaw rate, vertical accel, speed, bar angle
    "hidden": 32,
    "n_scores": 3,  # amplitude, style, landing
    "batch": 16,
    "lr": 2e-3,
    "epochs": 2,
    "sigma0": 0.4,
}


class NoisyLinear(nn.Module):
    def __init__(self, in_features, out_features, sigma0=0.4):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.noise_w = nn.Parameter(torch.empty(out_features, in_features))
        self.register_buffer("eps_w", torch.zeros(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        self.noise_b = nn.Parameter(torch.empty(out_features))
        self.register_buffer("eps_b", torch.zeros(out_features))
        self.sigma0 = sigma0
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.weight.size(1))
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)
            self.bias.uniform_(-bound, bound)
            self.noise_w.fill_(self.sigma0 * bound)
            self.noise_b.fill_(self.sigma0 * bound)

    def forward(self, x):
        weight = self.weight + self.noise_w * self.eps_w.normal_()
        bias = self.bias + self.noise_b * self.eps_b.normal_()
        return F.linear(x, weight, bias)


class JumpJudge(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        flat = cfg["window"] * cfg["channels"]
        self.encoder = nn.Sequential(nn.Linear(flat, cfg["hidden"]), nn.Tanh(), nn.Linear(cfg["hidden"], cfg["hidden"]))
        self.head = NoisyLinear(cfg["hidden"], cfg["n_scores"], cfg["sigma0"])

    def forward(self, window):
        return self.head(torch.tanh(self.encoder(window.flatten(1))))


def make_runs(cfg):
    takeoff = torch.randn(cfg["n_jumps"], cfg["window"], cfg["channels"])
    landing = torch.randn(cfg["n_jumps"], cfg["window"], cfg["channels"])
    mix = torch.randn(cfg["window"] * cfg["channels"], cfg["n_scores"]) * 0.2
    takeoff_marks = torch.sigmoid(takeoff.flatten(1) @ mix) * 10.0
    landing_marks = torch.sigmoid(landing.flatten(1) @ mix) * 10.0
    return takeoff, landing, takeoff_marks, landing_marks


def judge_epoch(judge, optimizer, runs, cfg):
    takeoff, landing, takeoff_marks, landing_marks = runs
    total = 0.0
    for start in range(0, cfg["n_jumps"], cfg["batch"]):
        sl = slice(start, start + cfg["batch"])
        optimizer.zero_grad()
        takeoff_pred = judge(takeoff[sl])
        landing_pred = judge(landing[sl])
        score_loss = F.mse_loss(takeoff_pred, takeoff_marks[sl]) + F.mse_loss(landing_pred, landing_marks[sl])
        score_loss.backward()
        optimizer.step()
        total += score_loss.item()
    return total


def main():
    torch.manual_seed(11)
    cfg = CONFIG
    runs = make_runs(cfg)
    judge = JumpJudge(cfg)
    optimizer = torch.optim.Adam(judge.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        total = judge_epoch(judge, optimizer, runs, cfg)
        print(f"epoch {epoch}: score loss {total:.4f}")


if __name__ == "__main__":
    main()
