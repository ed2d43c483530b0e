"""DeepAR-style probabilistic forecaster: an LSTM over lagged values and covariates emits a Gaussian
per step; the horizon is forecast by ancestral sampling, and the model is trained on the CRPS
estimated from those sample paths.

Report: https://github.com/jankrepl/deepdow/pull/106 ("Fix rsample bug", closing issue #101: "The
`sample` function makes it impossible to compute the gradients, used `rsample` instead"). The report
is a portfolio-allocation layer that drew from a torch distribution with ``.sample()``; the training
setting is the writer's: the author draws each horizon step with ``Normal(mu, sigma).sample()``, feeds
the draw back as the next lag, and the sample-based CRPS is then a constant, so ``loss.backward()``
fails with "element 0 of tensors does not require grad and does not have a grad_fn".
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal

torch.manual_seed(0)

N_SERIES, LENGTH = 48, 60
CONTEXT, HORIZON = 24, 8
N_PATHS = 6
BATCH = 8


def make_series():
    t = torch.arange(LENGTH, dtype=torch.float32)
    level = 5.0 + 2.0 * torch.rand(N_SERIES, 1)
    phase = 2 * math.pi * torch.rand(N_SERIES, 1)
    season = torch.sin(2 * math.pi * t / 12 + phase)
    y = level + season + 0.3 * torch.randn(N_SERIES, LENGTH)
    covariates = torch.stack([torch.sin(2 * math.pi * t / 12), torch.cos(2 * math.pi * t / 12)], -1)
    return y, covariates.expand(N_SERIES, LENGTH, 2)


def sample_windows(y, cov):
    starts = torch.randint(0, LENGTH - CONTEXT - HORIZON, (BATCH,))
    rows = torch.randint(0, N_SERIES, (BATCH,))
    steps = starts.unsqueeze(1) + torch.arange(CONTEXT + HORIZON)
    return y[rows.unsqueeze(1), steps], cov[rows.unsqueeze(1), steps]


class DeepAR(nn.Module):
    def __init__(self, cov_dim=2, hidden=32):
        super().__init__()
        self.rnn = nn.LSTM(1 + cov_dim, hidden, num_layers=1, batch_first=True)
        self.mu = nn.Linear(hidden, 1)
        self.sigma = nn.Linear(hidden, 1)

    def step(self, lag, cov, state=None):
        out, state = self.rnn(torch.cat([lag, cov], -1), state)
        mu = self.mu(out).squeeze(-1)
        sigma = F.softplus(self.sigma(out)).squeeze(-1) + 1e-3
        return mu, sigma, state

    def forecast(self, y_ctx, cov_ctx, cov_fut, n_paths):
        scale = y_ctx.abs().mean(1, keepdim=True) + 1.0
        y_ctx = (y_ctx / scale).repeat_interleave(n_paths, 0)
        cov_ctx = cov_ctx.repeat_interleave(n_paths, 0)
        cov_fut = cov_fut.repeat_interleave(n_paths, 0)
        lags = torch.cat([torch.zeros_like(y_ctx[:, :1]), y_ctx[:, :-1]], 1).unsqueeze(-1)
        _, _, state = self.step(lags, cov_ctx)
        lag = y_ctx[:, -1:].unsqueeze(-1)
        paths = []
        for h in range(cov_fut.size(1)):
            mu, sigma, state = self.step(lag, cov_fut[:, h:h + 1], state)
            draw = Normal(mu, sigma).sample()
            paths.append(draw)
            lag = draw.unsqueeze(-1)
        paths = torch.cat(paths, 1).view(-1, n_paths, cov_fut.size(1))
        return paths * scale.unsqueeze(1)


def crps_from_samples(paths, target):
    """Energy form of the CRPS: E|X - y| - 0.5 E|X - X'|, averaged over series and steps."""
    term1 = (paths - target.unsqueeze(1)).abs().mean(1)
    term2 = (paths.unsqueeze(1) - paths.unsqueeze(2)).abs().mean((1, 2))
    return (term1 - 0.5 * term2).mean()


def train(steps=12):
    y, cov = make_series()
    model = DeepAR()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for it in range(steps):
        y_win, cov_win = sample_windows(y, cov)
        y_ctx, y_fut = y_win[:, :CONTEXT], y_win[:, CONTEXT:]
        paths = model.forecast(y_ctx, cov_win[:, :CONTEXT], cov_win[:, CONTEXT:], N_PATHS)
        loss = crps_from_samples(paths, y_fut)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
        if it % 4 == 0:
            print(f"step {it} crps {loss.item():.3f}")


if __name__ == "__main__":
    train()
