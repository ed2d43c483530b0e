"""REINFORCE on a toy bandit: a policy object records each step's log-probability in a list, and the episode's
loss is computed by a helper from a tensor made of that list."""

import torch
from torch import nn

torch.manual_seed(4)


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.scores = nn.Linear(5, 3)
        self.logps = []

    def choose(self, obs):
        dist = torch.distributions.Categorical(logits=self.scores(obs))
        arm = dist.sample()
        self.logps.append(dist.log_prob(arm))
        return int(arm)


def episode_loss(policy, rewards):
    logps = torch.stack(policy.logps)
    returns = torch.tensor(rewards).flip(0).cumsum(0).flip(0)
    return -(logps * (returns - returns.mean())).sum()


policy = Policy()
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
payout = torch.tensor([0.1, 0.5, 0.9])
for episode in range(3):
    rewards = []
    for t in range(6):
        arm = policy.choose(torch.randn(5))
        rewards.append(float(payout[arm]))
    objective = episode_loss(policy, rewards)
    opt.zero_grad()
    objective.backward()
    opt.step()
    policy.logps.clear()
