"""PPO on a toy continuous task: a rollout, then several epochs of clipped-surrogate updates on it."""

import torch
import torch.nn as nn
from torch.distributions import Normal

CLIP = 0.2
PPO_EPOCHS = 4


class Agent(nn.Module):
    def __init__(self, obs_dim=4, act_dim=2):
        super().__init__()
        self.mu = nn.Sequential(nn.Linear(obs_dim, 32), nn.Tanh(), nn.Linear(32, act_dim))
        self.log_std = nn.Parameter(torch.full((act_dim,), -0.5))
        self.value = nn.Sequential(nn.Linear(obs_dim, 32), nn.Tanh(), nn.Linear(32, 1))

    def dist(self, obs):
        return Normal(self.mu(obs), self.log_std.exp())


def collect(agent, n=64):
    obs = torch.randn(n, 4)
    dist = agent.dist(obs)
    actions = dist.sample()
    log_probs = dist.log_prob(actions).sum(-1).detach()
    rewards = -(actions - obs[:, :2]).pow(2).sum(-1)
    return obs, actions, log_probs, rewards


def update(agent, optimizer, batch):
    obs, actions, old_log_probs, rewards = batch
    for _ in range(PPO_EPOCHS):
        values = agent.value(obs).squeeze(-1)
        advantages = (rewards - values).detach()
        new_log_probs = agent.dist(obs).log_prob(actions).sum(-1)
        ratio = torch.exp(new_log_probs - old_log_probs)
        surrogate = torch.min(ratio * advantages, ratio.clamp(1 - CLIP, 1 + CLIP) * advantages)
        ppo_loss = -surrogate.mean() + 0.5 * (rewards - values).pow(2).mean()
        optimizer.zero_grad()
        ppo_loss.backward()
        optimizer.step()
    return ppo_loss.item()


if __name__ == "__main__":
    torch.manual_seed(24)
    agent = Agent()
    optimizer = torch.optim.Adam(agent.parameters(), lr=3e-4)
    for iteration in range(3):
        batch = collect(agent)
        print(iteration, update(agent, optimizer, batch))
