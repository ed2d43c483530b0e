"""A shared trunk with two task heads; `fit_head()` computes one task's loss and backwards it, and the epoch
loop adds the returned losses into `joint` for the log, then backwards that as well before the step."""

import torch
import torch.nn.functional as F
from torch import nn


def fit_head(trunk, head, xb, yb):
    err = F.mse_loss(head(trunk(xb)), yb)
    err.backward()
    return err


torch.manual_seed(21)
trunk = nn.Sequential(nn.Linear(6, 12), nn.Tanh())
heads = nn.ModuleList([nn.Linear(12, 1), nn.Linear(12, 2)])
sgd = torch.optim.SGD([*trunk.parameters(), *heads.parameters()], lr=0.05)
xs = torch.randn(4, 10, 6)
ys = [torch.randn(4, 10, 1), torch.randn(4, 10, 2)]
for epoch in range(4):
    sgd.zero_grad()
    joint = fit_head(trunk, heads[0], xs[epoch], ys[0][epoch]) + fit_head(trunk, heads[1], xs[epoch], ys[1][epoch])
    sgd.step()
    print(f"epoch {epoch}: {joint.item():.4f}")
