"""A small GAN: the critic scores the real batch and the detached fake batch and steps; corrected: the maker's loss scores
the fake batch again, through the stepped critic, without the detach."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(131)

maker = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 5))
critic = nn.Sequential(nn.Linear(5, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
opt_m = torch.optim.Adam(maker.parameters(), lr=2e-3)
opt_c = torch.optim.Adam(critic.parameters(), lr=2e-3)
ones, zeros = torch.ones(6, 1), torch.zeros(6, 1)
for _ in range(3):
    real = torch.randn(6, 5)
    fake = maker(torch.randn(6, 3))
    critic.zero_grad()
    score = critic(real)
    loss_real = F.binary_cross_entropy_with_logits(score, ones)
    loss_real.backward()
    score = critic(fake.detach())
    loss_fake = F.binary_cross_entropy_with_logits(score, zeros)
    loss_fake.backward()
    opt_c.step()
    maker.zero_grad()
    score = critic(fake)
    loss_maker = F.binary_cross_entropy_with_logits(score, ones)
    loss_maker.backward()
    opt_m.step()
