"""Two task heads on one encoder, trained in turns: each turn appends the task's error to a history the function
keeps for its report, then backwards ``history[k]``. On the first round the item at ``k`` is the error just
computed; from the second round on it is the first round's, whose graph was freed."""

import torch
from torch import nn

torch.manual_seed(0)


def fit(encoder, heads, rounds=3):
    params = [*encoder.parameters(), *(p for h in heads for p in h.parameters())]
    opt = torch.optim.SGD(params, lr=0.05)
    history = []
    for r in range(rounds):
        for k, head in enumerate(heads):
            x, y = torch.randn(8, 4), torch.randn(8, 1)
            err = nn.functional.mse_loss(head(torch.relu(encoder(x))), y)
            history.append(err)
            opt.zero_grad()
            err.backward()
            opt.step()
    return [e.item() for e in history]


encoder = nn.Linear(4, 6)
heads = [nn.Linear(6, 1), nn.Linear(6, 1)]
fit(encoder, heads)
