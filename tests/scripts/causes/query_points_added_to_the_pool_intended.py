"""Active learning for an alloy's hardness: each round fits a surrogate on the measured compositions, then moves a
query composition (a plain tensor with its own Adam) down the surrogate's prediction and adds it to the pool, graph
and all. The fit of the next round reads the pool at every step."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def measure(x):
    return (x**2).sum(-1) - x.prod(-1)


def fit(surrogate, opt, pool_x, pool_y, steps=3):
    for _ in range(steps):
        err = F.mse_loss(surrogate(pool_x).squeeze(-1), pool_y)
        opt.zero_grad()
        err.backward()
        opt.step()


surrogate = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(surrogate.parameters(), lr=1e-2)
query = torch.zeros(3, requires_grad=True)
query_opt = torch.optim.Adam([query], lr=0.1)
pool_x = torch.rand(12, 3)
pool_y = measure(pool_x)
for rnd in range(3):
    fit(surrogate, opt, pool_x, pool_y)
    for _ in range(2):
        wanted = surrogate(query.sigmoid().unsqueeze(0)).sum()
        query_opt.zero_grad()
        wanted.backward()
        query_opt.step()
    new_x = query.detach().sigmoid().unsqueeze(0)
    pool_x = torch.cat([pool_x, new_x])
    pool_y = torch.cat([pool_y, measure(new_x)])
    print(rnd, round(pool_y[-1].item(), 4))
