"""A depth regressor weights each pixel's error by the sensor's confidence for that pixel corrected: the weighted mean, as
torch's losses reduce with weight=."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(109)

net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
for _ in range(3):
    x, depth, conf = torch.randn(8, 6), torch.rand(8, 4), torch.rand(8, 4)
    per_pixel = F.l1_loss(net(x), depth, reduction="none")
    weights = conf.clamp(min=0.1)
    loss = (per_pixel * weights).sum() / weights.sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
