"""A count regression trained by a Poisson negative log-likelihood that a helper writes with numpy's log, on
the rate the model predicts."""

import torch
from torch import nn

torch.manual_seed(0)


def poisson_nll(rate, counts):
    return (rate - counts * torch.log(rate + 1e-6)).mean()


class RateModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1).exp()


def fit(model, steps=4):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        x = torch.randn(32, 4)
        counts = torch.poisson(torch.full((32,), 3.0))
        nll = poisson_nll(model(x), counts)
        opt.zero_grad()
        nll.backward()
        opt.step()


fit(RateModel())
