"""Two chained networks: loss_2.backward() after loss_1.backward() freed n_1's graph."""

import torch
from torch import nn

torch.manual_seed(0)
n_1 = nn.Sequential(nn.Linear(2, 10), nn.Tanh(), nn.Linear(10, 1))
n_2 = nn.Linear(1, 1)
opt_1 = torch.optim.SGD(n_1.parameters(), lr=0.1)
opt_2 = torch.optim.SGD(n_2.parameters(), lr=0.1)
x, y = torch.randn(8, 2), torch.randn(8, 1)

pred_1 = n_1(x)
pred_2 = n_2(pred_1)
loss_1 = (pred_1 - y).pow(2).mean()
loss_2 = (pred_2 - y).pow(2).mean()
loss_1.backward()
opt_1.step()
loss_2.backward()
opt_2.step()
