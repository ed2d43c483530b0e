"""Profiles a trained encoder computed once are kept on a settings object handed to the training function, and read
by every iteration's loss; the loss is made fresh each iteration, then a penalty is added to it on a line of its
own."""

import torch
import torch.nn as nn


class Settings:
    def __init__(self, profiles: torch.Tensor, opt: torch.optim.Optimizer) -> None:
        self.profiles = profiles
        self.opt = opt


def make_settings(encoder, head):
    profiles = encoder(torch.randn(5, 3))
    return Settings(profiles, torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.1))


def run(settings, head):
    for _ in range(3):
        y = torch.randn(5, 1)
        fit = ((head(settings.profiles) - y) ** 2).mean()
        fit = fit + 1e-3 * settings.profiles.pow(2).mean()
        settings.opt.zero_grad()
        fit.backward()
        settings.opt.step()


torch.manual_seed(1)
encoder, head = nn.Linear(3, 4), nn.Linear(4, 1)
run(make_settings(encoder, head), head)
