"""A regression loop that logs its loss as a number, then rebuilds a tensor from the number to backward it."""

import torch
from torch import nn

torch.manual_seed(3)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
sgd = torch.optim.SGD(net.parameters(), lr=0.05)
inputs, targets = torch.randn(32, 4), torch.randn(32, 1)
for epoch in range(4):
    sgd.zero_grad()
    mse = nn.functional.mse_loss(net(inputs), targets)
    value = mse.item()
    objective = torch.tensor(value, requires_grad=False) * 1.0
    objective.backward()
    sgd.step()
