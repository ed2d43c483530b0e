"""A contrastive trainer object (not a module) with a learnable log-temperature, exponentiated once when built."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ContrastiveTrainer:
    def __init__(self, encoder, lr=1e-2):
        self.encoder = encoder
        self.log_temp = torch.tensor(-1.0, requires_grad=True)
        self.temp = self.log_temp.exp()
        self.opt = torch.optim.Adam([*encoder.parameters(), self.log_temp], lr=lr)

    def train_step(self, a, b):
        za = F.normalize(self.encoder(a), dim=1)
        zb = F.normalize(self.encoder(b), dim=1)
        logits = za @ zb.t() / self.temp
        nce = F.cross_entropy(logits, torch.arange(len(a)))
        self.opt.zero_grad()
        nce.backward()
        self.opt.step()
        return nce.item()


trainer = ContrastiveTrainer(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8)))
for step in range(3):
    view = torch.randn(10, 6)
    trainer.train_step(view + 0.1 * torch.randn(10, 6), view + 0.1 * torch.randn(10, 6))
