"""A train step decorated with @torch.no_grad(), copied from an evaluation helper."""

import torch
from torch import nn


@torch.no_grad()
def train_step(encoder, head, opt, x, y):
    opt.zero_grad()
    loss = nn.functional.mse_loss(head(encoder(x)), y)
    loss.backward()
    opt.step()
    return loss.item()


torch.manual_seed(11)
encoder, head = nn.Linear(3, 5), nn.Linear(5, 1)
opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-2)
for _ in range(3):
    train_step(encoder, head, opt, torch.randn(10, 3), torch.randn(10, 1))
