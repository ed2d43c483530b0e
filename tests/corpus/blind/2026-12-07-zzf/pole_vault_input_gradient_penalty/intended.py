"""Pole vault technique: regress bar clearance from take-off kinematics, with an input-gradient penalty.

Source: https://github.com/pytorch/pytorch/issues/7714

The report ("Very slow for gradient penalty!") trains a classifier with a penalty
on the L2 norm of the loss's gradient with respect to the inputs: it takes
``autograd.grad(loss_c, x, create_graph=True, retain_graph=True)``, adds
``(grad ** 2).mean()`` to the loss and calls ``backward`` on the sum. This script
reduces that step to a clearance regressor for pole vault take-offs (the penalty
keeps the prediction smooth in the measured kinematics) written without the two
flags: ``autograd.grad`` frees the graph of ``fit_loss`` and the penalty carries no
graph of its own, so the backward of the sum goes through a freed graph. The
report's step, with both flags, is the intended one.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

RUN = {
    "n_jumps": 72,
    "kinematics": 8,  # run-up speed, last-step length, plant angle, pole bend, grip height...
    "hidden": 48,
    "batch": 18,
    "lr": 1e-3,
    "epochs": 2,
}


class ClearanceRegressor(nn.Module):
    def __init__(self, n_in, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, hidden), nn.Softplus(), nn.Linear(hidden, hidden), nn.Softplus())
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.out(self.body(x)).squeeze(-1)


def input_gradient_penalty(loss, inputs):
    grads = torch.autograd.grad(loss, inputs, create_graph=True, retain_graph=True)[0]
    return grads.pow(2).sum(dim=1).mean()


def vault_sessions(cfg):
    kin = torch.randn(cfg["n_jumps"], cfg["kinematics"])
    coef = torch.linspace(0.4, -0.2, cfg["kinematics"])
    clearance = 5.2 + 0.3 * torch.tanh(kin @ coef) + 0.05 * torch.randn(cfg["n_jumps"])
    return kin, clearance


def fit(regressor, optimiser, kin, clearance, cfg):
    for epoch in range(cfg["epochs"]):
        order = torch.randperm(cfg["n_jumps"])
        for start in range(0, cfg["n_jumps"], cfg["batch"]):
            idx = order[start : start + cfg["batch"]]
            kinematics = kin[idx].clone().requires_grad_(True)
            optimiser.zero_grad()
            pred = regressor(kinematics)
            fit_loss = F.mse_loss(pred, clearance[idx])
            smooth_penalty = input_gradient_penalty(fit_loss, kinematics)
            (fit_loss + 0.1 * smooth_penalty).backward()
            optimiser.step()
        print(f"epoch {epoch}: fit {fit_loss.item():.4f} penalty {smooth_penalty.item():.4f}")


def main():
    torch.manual_seed(612)
    cfg = RUN
    kin, clearance = vault_sessions(cfg)
    regressor = ClearanceRegressor(cfg["kinematics"], cfg["hidden"])
    optimiser = torch.optim.SGD(regressor.parameters(), lr=cfg["lr"], momentum=0.9)
    fit(regressor, optimiser, kin, clearance, cfg)


if __name__ == "__main__":
    main()
