"""A regression run that keeps each batch's loss for a learning curve, summarised with numpy by a helper after
each epoch."""

import numpy as np
import torch
from torch import nn

torch.manual_seed(13)


def summarise(history, name):
    curve = np.array(history, dtype=np.float32)
    return f"{name}: last {curve[-1]:.3f}, best {curve.min():.3f}"


model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
xs, ys = torch.randn(32, 4), torch.randn(32, 1)
seen = []
for epoch in range(2):
    for lo in range(0, 32, 8):
        mse = nn.functional.mse_loss(model(xs[lo : lo + 8]), ys[lo : lo + 8])
        opt.zero_grad()
        mse.backward()
        opt.step()
        seen.append(mse.detach())
    print(summarise(seen, "mse"))
