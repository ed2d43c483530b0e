"""Per-sample losses (reduction='none') kept for weighting later, backwarded as they are."""

import torch
from torch import nn

torch.manual_seed(31)
net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
criterion = nn.MSELoss(reduction="none")
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
x, y = torch.randn(9, 3), torch.randn(9, 1)
for _ in range(3):
    opt.zero_grad()
    per_sample = criterion(net(x), y)
    per_sample.backward()
    opt.step()
