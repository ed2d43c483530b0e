"""Choosing a rowing crew's seat order: a trainer object keeps the scoring model and a module of learnable mixture
logits, and builds the categorical prior over orders once, in its constructor, from that module."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class OrderLogits(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.logits = nn.Parameter(torch.zeros(n))

    def forward(self):
        return self.logits


class CrewTrainer:
    def __init__(self, scorer, order_logits):
        self.scorer = scorer
        self.order_logits = order_logits
        self.opt = torch.optim.Adam([*scorer.parameters(), *order_logits.parameters()], lr=0.05)

    def step(self, x, order, y):
        fit = F.mse_loss(self.scorer(x).squeeze(-1), y)
        prior = torch.distributions.Categorical(logits=self.order_logits())
        loss = fit - 0.1 * prior.log_prob(order).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


trainer = CrewTrainer(nn.Linear(6, 1), OrderLogits(4))
for it in range(3):
    print(it, round(trainer.step(torch.randn(8, 6), torch.randint(0, 4, (8,)), torch.randn(8)), 4))
