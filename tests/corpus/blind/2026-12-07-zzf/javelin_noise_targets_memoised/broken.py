"""Heteroskedastic javelin throw-distance regression fitted with restarts.

Source: https://github.com/meta-pytorch/botorch/issues/2370 ("fit_gpytorch_mll gives backward pass
runtime exception on second model fit attempt with HeteroskedasticSingleTaskGP"). The author fitted a
heteroskedastic model (a main model plus a model of the observed noise variances, with input and
outcome transforms) and got "Trying to backward through the graph a second time" once the fitting
routine evaluated the loss again. The report shows the symptom, not its cause.

Reduction (the cause is the writer's): a throw-distance regressor with a mean head and a log-variance
head, plus a noise model fitted to the log of the measured variances floored by a learnable softplus
term. The model memoises those transformed noise targets on itself the first time they are needed, so
the next evaluation of the loss backwards through the graph the first evaluation already freed.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

FIT = {"max_attempts": 2, "iterations": 6, "lr": 0.02, "n_throws": 96, "noise_weight": 0.5}
FEATURES = ["release_speed", "release_angle", "release_height", "attack_angle", "wind"]


class ThrowDistanceModel(nn.Module):
    def __init__(self, n_features, hidden=32):
        super().__init__()
        self.mean_net = nn.Sequential(nn.Linear(n_features, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.noise_net = nn.Sequential(nn.Linear(n_features, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.noise_floor = nn.Parameter(torch.tensor(-2.0))
        self._noise_targets = None

    def forward(self, x):
        return self.mean_net(x).squeeze(-1), self.noise_net(x).squeeze(-1)

    def noise_targets(self, measured_var):
        if self._noise_targets is None:
            self._noise_targets = torch.log(measured_var + F.softplus(self.noise_floor))
        return self._noise_targets

    def reset_heads(self):
        for net in (self.mean_net, self.noise_net):
            for layer in net:
                if isinstance(layer, nn.Linear):
                    layer.reset_parameters()


def simulate_throws(n):
    speed = 24 + 6 * torch.rand(n)
    angle = torch.deg2rad(30 + 10 * torch.rand(n))
    height = 1.8 + 0.3 * torch.rand(n)
    attack = torch.deg2rad(-5 + 10 * torch.rand(n))
    wind = torch.randn(n)
    g = 9.81
    vy = speed * torch.sin(angle)
    flight = (vy + torch.sqrt(vy**2 + 2 * g * height)) / g
    distance = speed * torch.cos(angle) * flight * (1 - 0.25 * attack.abs()) + 0.8 * wind
    measured_var = 0.2 + 0.5 * wind.abs()
    distance = distance + torch.randn(n) * measured_var.sqrt()
    x = torch.stack([speed, angle, height, attack, wind], dim=1)
    x = (x - x.mean(0)) / x.std(0)
    return x, (distance - distance.mean()) / distance.std(), measured_var / distance.var()


def gaussian_nll(mean, log_var, target):
    return 0.5 * (log_var + (target - mean) ** 2 / log_var.exp() + math.log(2 * math.pi)).mean()


def fit_attempt(model, x, y, measured_var, cfg):
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    last = float("nan")
    for it in range(cfg["iterations"]):
        optimizer.zero_grad()
        mean, log_var = model(x)
        nll = gaussian_nll(mean, log_var, y)
        noise_loss = cfg["noise_weight"] * F.mse_loss(log_var, model.noise_targets(measured_var))
        (nll + noise_loss).backward()
        optimizer.step()
        last = nll.item()
    return last


def fit_with_restarts(model, x, y, measured_var, cfg):
    for attempt in range(cfg["max_attempts"]):
        final = fit_attempt(model, x, y, measured_var, cfg)
        print(f"attempt {attempt}: final nll {final:.4f}")
        if math.isfinite(final):
            return final
        model.reset_heads()
    raise RuntimeError("fit did not converge")


def main():
    torch.manual_seed(3)
    x, y, measured_var = simulate_throws(FIT["n_throws"])
    model = ThrowDistanceModel(len(FEATURES))
    fit_with_restarts(model, x, y, measured_var, FIT)


if __name__ == "__main__":
    main()
