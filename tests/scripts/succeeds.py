"""A tiny training run that works: output must be the same as with plain python."""

import os
import sys

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 3), torch.randn(8, 1)

print("name", __name__)
print("argv", sys.argv[1:], os.path.basename(sys.argv[0]))
print("path0", os.path.basename(sys.path[0]))
print("file", os.path.basename(__file__))
for step in range(2):
    loss = (model(x) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f}")
