"""Contrastive pretraining of two small towers with a learned temperature: the loss helper computes the temperature
from its learned log at each call."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(13)
log_temp = nn.Parameter(torch.tensor(0.0))


def info_nce(za, zb):
    temperature = log_temp.exp().clamp(min=0.05)
    logits = F.normalize(za, dim=1) @ F.normalize(zb, dim=1).T / temperature
    return F.cross_entropy(logits, torch.arange(za.shape[0]))


def pretrain(rounds=3):
    tower_a, tower_b = nn.Linear(6, 4), nn.Linear(5, 4)
    opt = torch.optim.Adam([*tower_a.parameters(), *tower_b.parameters(), log_temp], lr=1e-2)
    for r in range(rounds):
        xa, xb = torch.randn(8, 6), torch.randn(8, 5)
        nce = info_nce(tower_a(xa), tower_b(xb))
        opt.zero_grad()
        nce.backward()
        opt.step()
    return nce.item()


print(round(pretrain(), 5))
