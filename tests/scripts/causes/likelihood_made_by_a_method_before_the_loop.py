"""Calibrating a load cell: the observation noise is a module whose method makes a Laplace likelihood from its
learned log-scale; the training function asks for it once, before its loop over batches."""

import torch
import torch.nn as nn

torch.manual_seed(0)


class Noise(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_scale = nn.Parameter(torch.zeros(()))

    def likelihood(self):
        return torch.distributions.Laplace(torch.zeros(()), self.log_scale.exp() + 1e-3)


def fit(net, noise, xs, ys, opt):
    lik = noise.likelihood()
    for i in range(0, len(xs), 8):
        nll = -lik.log_prob(ys[i : i + 8] - net(xs[i : i + 8]).squeeze(-1)).mean()
        opt.zero_grad()
        nll.backward()
        opt.step()
        print(i, round(nll.item(), 4))


net, noise = nn.Linear(3, 1), Noise()
fit(
    net, noise, torch.randn(24, 3), torch.randn(24), torch.optim.Adam([*net.parameters(), *noise.parameters()], lr=0.05)
)
