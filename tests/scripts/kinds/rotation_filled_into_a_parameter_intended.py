"""Aligning IMU frames: a rotation about the vertical axis by a learnable angle, written entry by entry into a matrix
the module declared as a parameter, then applied to the readings; a head classifies the aligned windows."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Align(nn.Module):
    def __init__(self):
        super().__init__()
        self.theta = nn.Parameter(torch.tensor(0.3))

    def forward(self, x):
        c, s = torch.cos(self.theta), torch.sin(self.theta)
        zero, one = torch.zeros_like(c), torch.ones_like(c)
        rot = torch.stack([torch.stack([c, -s, zero]), torch.stack([s, c, zero]), torch.stack([zero, zero, one])])
        return x @ rot.T


align = Align()
head = nn.Linear(15, 3)
opt = torch.optim.Adam([*align.parameters(), *head.parameters()], lr=0.05)
for it in range(3):
    x = torch.randn(8, 5, 3)
    y = torch.randint(0, 3, (8,))
    loss = F.cross_entropy(head(align(x).flatten(1)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(it, round(loss.item(), 4))
