"""The intended training of one_loss_backwarded_for_each_optimizer.py: one backward, then both steps.

One loss backwarded twice, once for each optimizer: the encoder's optimizer steps between the two backward calls,
so the second meets the encoder's weights rewritten in place."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

encoder = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 12), nn.Tanh())
head = nn.Linear(12, 1)
opt_encoder = torch.optim.SGD(encoder.parameters(), lr=0.05, momentum=0.9)
opt_head = torch.optim.Adam(head.parameters(), lr=1e-3)
for it in range(3):
    x, y = torch.randn(32, 6), torch.randn(32, 1)
    fit = F.mse_loss(head(encoder(x)), y)
    opt_encoder.zero_grad()
    opt_head.zero_grad()
    fit.backward()
    opt_encoder.step()
    opt_head.step()
    print(it, round(fit.item(), 4))
