"""A refiner and its critic in one class: the critic's turn keeps its score on self; the refiner's turn computes a
fresh score of its own, then builds its loss from self.score, whose graph the critic's backward freed."""

import torch
from torch import nn


class Pair:
    def __init__(self):
        self.refiner = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
        self.critic = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        self.opt_r = torch.optim.Adam(self.refiner.parameters(), lr=1e-3)
        self.opt_c = torch.optim.Adam(self.critic.parameters(), lr=1e-3)

    def critic_turn(self, rough, clean):
        self.refined = self.refiner(rough)
        self.score = self.critic(self.refined.detach())
        c_loss = self.score.mean() - self.critic(clean).mean()
        self.opt_c.zero_grad()
        c_loss.backward()
        self.opt_c.step()

    def refiner_turn(self, clean):
        score = self.critic(self.refined)
        r_loss = -self.score.mean() + (self.refined - clean).abs().mean()
        self.opt_r.zero_grad()
        r_loss.backward()
        self.opt_r.step()


torch.manual_seed(17)
pair = Pair()
for _ in range(3):
    rough, clean = torch.randn(6, 4), torch.randn(6, 4)
    pair.critic_turn(rough, clean)
    pair.refiner_turn(clean)
