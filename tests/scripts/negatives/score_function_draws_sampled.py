"""A negative case of this stop's review: the script a rule was not written for (see tests/test_negatives.py)."""

import torch
import torch.nn as nn
from torch.distributions import Normal

torch.manual_seed(0)


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Linear(3, 1)

    def act(self, s):
        mu = self.mu(s)
        a = Normal(mu, 1.0).sample()
        return a, Normal(mu, 1.0).log_prob(a)


def env_step(a):
    return torch.where(a > 0, 1.0, -1.0)


policy = Policy()
opt = torch.optim.Adam(policy.parameters(), 1e-2)
for _ in range(3):
    s = torch.randn(32, 3)
    a, logp = policy.act(s)
    loss = -env_step(a).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
