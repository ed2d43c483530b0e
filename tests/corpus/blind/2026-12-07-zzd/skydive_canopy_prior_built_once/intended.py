"""Skydiving canopy descent: predict the descent rate of an opened canopy from wing loading and air state.

Source: https://github.com/pytorch/pytorch/issues/24846 -- the author makes a
``torch.distributions.Normal(mean, torch.exp(log_std))`` from two ``nn.Parameter``s and only later
initialises the parameters; the distribution keeps the ``scale`` tensor that was computed when it was
made (``grad_fn=<ExpBackward>``) instead of following the parameter. A distribution object is a
snapshot of tensors computed at construction time, graph included.

Reduction: a descent-rate regressor is trained with a Gaussian likelihood whose observation noise is a
learned log-std. The noise distribution is built once in ``build_likelihood`` before the loop, so its
``scale = exp(log_noise)`` is a single graph node created once; the first step's backward frees it and
the second step backpropagates through it again.
"""
import torch
import torch.nn as nn
from torch.distributions import Normal

torch.manual_seed(21)

SETTINGS = {
    "n_jumps": 160,
    "batch": 40,
    "steps_per_epoch": 4,
    "epochs": 2,
    "lr": 1e-2,
}

FEATURES = ["wing_loading", "canopy_area", "air_density", "brake_setting", "altitude_km", "gust"]


def synth_jumps(n):
    x = torch.randn(n, len(FEATURES))
    true_w = torch.tensor([1.2, -0.8, -0.5, -0.9, 0.3, 0.4])
    rate = 5.0 + x @ true_w + 0.35 * torch.randn(n)  # m/s
    return x, rate


class DescentRateNet(nn.Module):
    def __init__(self, n_in):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, 24), nn.Tanh(), nn.Linear(24, 1))

    def forward(self, x):
        return self.body(x).squeeze(-1)


def build_likelihood(log_noise):
    return Normal(torch.zeros(()), torch.exp(log_noise))


def train(model, log_noise, data, cfg):
    x, rate = data
    opt = torch.optim.Adam(list(model.parameters()) + [log_noise], lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        perm = torch.randperm(len(rate))
        for k in range(cfg["steps_per_epoch"]):
            idx = perm[k * cfg["batch"]:(k + 1) * cfg["batch"]]
            residual = rate[idx] - model(x[idx])
            noise_dist = build_likelihood(log_noise)
            nll = -noise_dist.log_prob(residual).mean()
            opt.zero_grad()
            nll.backward()
            opt.step()
        print(f"epoch {epoch}: nll {nll.item():.3f} noise {log_noise.exp().item():.3f} m/s")


def main():
    data = synth_jumps(SETTINGS["n_jumps"])
    model = DescentRateNet(len(FEATURES))
    log_noise = nn.Parameter(torch.zeros(()))
    train(model, log_noise, data, SETTINGS)


if __name__ == "__main__":
    main()
