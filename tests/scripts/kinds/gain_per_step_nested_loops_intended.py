"""A sequence model whose encoder output is rescaled step by step in a helper: two nested loops iterate the batch and
each sequence's steps, and every step is multiplied in place by its gain."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
STEPS, WIDTH = 5, 6
GAINS = torch.linspace(0.5, 1.5, STEPS)


def apply_gains(batch):
    return batch * GAINS[None, :, None]


encoder = nn.Linear(3, WIDTH)
head = nn.Linear(WIDTH, 1)
opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-2)
for _ in range(3):
    x, y = torch.randn(4, STEPS, 3), torch.randn(4, 1)
    h = apply_gains(encoder(x))
    loss = F.mse_loss(head(h.mean(1)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
