"""Actor-critic with separate networks and optimizers; the critic is updated first."""

import torch
import torch.nn as nn
from torch.distributions import Normal

torch.manual_seed(23)
actor = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 1))
critic = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 1))
actor_optim = torch.optim.Adam(actor.parameters(), lr=3e-4)
critic_optim = torch.optim.Adam(critic.parameters(), lr=1e-3)
log_std = torch.zeros(1)
gamma = 0.95


def env(state, action):
    reward = -(state[:, :1] - action).pow(2).squeeze(1)
    return torch.randn_like(state), reward


state = torch.randn(16, 3)
for episode in range(3):
    for t in range(3):
        mean = actor(state)
        dist = Normal(mean, log_std.exp())
        action = dist.sample()
        next_state, reward = env(state, action)

        value = critic(state).squeeze(1)
        with torch.no_grad():
            next_value = critic(next_state).squeeze(1)
        td_target = reward + gamma * next_value
        advantage = td_target - value

        critic_loss = advantage.pow(2).mean()
        critic_optim.zero_grad()
        critic_loss.backward()
        critic_optim.step()

        policy_loss = -(dist.log_prob(action).squeeze(1) * advantage.detach()).mean()
        actor_optim.zero_grad()
        policy_loss.backward()
        actor_optim.step()
        state = next_state
    print(episode, critic_loss.item(), policy_loss.item())
