"""Deep hedging of a European call under proportional transaction costs (entropic risk).

Report: https://github.com/zhangyu2234/Deep-learning-by-hand
The author's notebook documents "Trying to backward through the graph a second time" in a
hand-written training loop: the synthetic data were generated from the "true" parameters, which
had been created with ``requires_grad=True`` (``Y = torch.mm(X, true_W) + true_b``), so every
minibatch of ``Y`` carried that generation graph; the first ``l.backward()`` freed it and the
second minibatch failed. The training setting is the writer's: Monte Carlo price paths are
simulated once from geometric Brownian motion whose drift and volatility tensors were created
with ``requires_grad=True``, and a hedging network is trained on minibatches of those paths.
"""
import math

import torch
import torch.nn as nn

torch.manual_seed(0)

N_PATHS, N_STEPS, MATURITY, STRIKE, COST, RISK_AVERSION = 512, 20, 0.25, 1.0, 2e-3, 1.0

mu = torch.tensor(0.05)
sigma = torch.tensor(0.2)


def simulate_gbm(n_paths, n_steps, s0=1.0):
    dt = MATURITY / n_steps
    z = torch.randn(n_paths, n_steps)
    log_inc = (mu - 0.5 * sigma ** 2) * dt + sigma * math.sqrt(dt) * z
    log_s = torch.cat([torch.zeros(n_paths, 1), torch.cumsum(log_inc, dim=1)], dim=1)
    return s0 * torch.exp(log_s)


class HedgeNet(nn.Module):
    """Hedge ratio at each step from log-moneyness, time to maturity and the current position."""

    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))

    def forward(self, log_moneyness, tau, position):
        return self.net(torch.stack([log_moneyness, tau, position], dim=-1)).squeeze(-1)


def hedge_pnl(model, paths):
    n = paths.shape[0]
    position = torch.zeros(n)
    pnl = torch.zeros(n)
    for t in range(N_STEPS):
        tau = torch.full((n,), MATURITY * (1 - t / N_STEPS))
        new_position = model(torch.log(paths[:, t] / STRIKE), tau, position)
        pnl = pnl - COST * paths[:, t] * (new_position - position).abs()
        pnl = pnl + new_position * (paths[:, t + 1] - paths[:, t])
        position = new_position
    pnl = pnl - COST * paths[:, -1] * position.abs()
    return pnl - torch.clamp(paths[:, -1] - STRIKE, min=0.0)


def entropic_risk(pnl, lam=RISK_AVERSION):
    return (torch.logsumexp(-lam * pnl, dim=0) - math.log(pnl.shape[0])) / lam


model = HedgeNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
paths = simulate_gbm(N_PATHS, N_STEPS)
premium = torch.clamp(paths[:, -1] - STRIKE, min=0.0).mean().item()

for epoch in range(2):
    perm = torch.randperm(N_PATHS)
    for i in range(0, N_PATHS, 128):
        batch = paths[perm[i:i + 128]]
        loss = entropic_risk(hedge_pnl(model, batch) + premium)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: entropic risk {loss.item():.5f}")
