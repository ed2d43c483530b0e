"""nn.ReLU(inplace=True) right after a sigmoid, which saved its output for backward."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid(), nn.ReLU(inplace=True), nn.Linear(4, 1))
x = torch.randn(5, 3)

loss = model(x).pow(2).mean()
loss.backward()
