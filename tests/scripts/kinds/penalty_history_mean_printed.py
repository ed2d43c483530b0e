"""A regression fit with a smoothness penalty whose values are kept in a list and averaged with numpy in a
progress message written over two lines."""

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)

model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
penalties = []
xs = torch.linspace(-1, 1, 32).unsqueeze(1).repeat(1, 3)
ys = torch.sin(3 * xs[:, :1])

for it in range(6):
    pred = model(xs)
    penalty = (pred[1:] - pred[:-1]).pow(2).mean()
    total = (pred - ys).pow(2).mean() + 0.1 * penalty
    optimizer.zero_grad()
    total.backward()
    optimizer.step()
    penalties.append(penalty)
    if it % 2 == 1:
        print(
            f"iteration {it}: total {total.item():.4f},",
            f"mean penalty {np.mean(penalties):.5f}",
        )
