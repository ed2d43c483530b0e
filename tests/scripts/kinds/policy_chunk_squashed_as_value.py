"""A Gaussian policy splits its network's output into mean and log-scale with .chunk() and squashes the log-scale
in place where it is passed on: a write to one of several views, used as a value."""

import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self, obs=4, act=2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs, 16), nn.Tanh(), nn.Linear(16, 2 * act))

    def forward(self, obs):
        mu, log_sigma = self.net(obs).chunk(2, dim=-1)
        return torch.distributions.Normal(mu, log_sigma.tanh_().exp())


torch.manual_seed(31)
policy = Policy()
opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
for _ in range(3):
    obs, actions, adv = torch.randn(9, 4), torch.randn(9, 2), torch.randn(9)
    dist = policy(obs)
    pg = -(dist.log_prob(actions).sum(-1) * adv).mean()
    opt.zero_grad()
    pg.backward()
    opt.step()
