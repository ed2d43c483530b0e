"""DDPG-style update: the actor's loss goes through the critic; the critic is stepped before the actor's backward."""

import torch
import torch.nn as nn


class Actor(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, act_dim), nn.Tanh())

    def forward(self, obs):
        return self.net(obs)


class Critic(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.q = nn.Sequential(nn.Linear(obs_dim + act_dim, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, obs, act):
        return self.q(torch.cat([obs, act], dim=-1))


def sample_batch(gen, n=32, obs_dim=4, act_dim=2):
    obs = torch.randn(n, obs_dim, generator=gen)
    act = torch.rand(n, act_dim, generator=gen) * 2 - 1
    reward = -(obs[:, :1] ** 2) - 0.1 * (act**2).sum(-1, keepdim=True)
    return obs, act, reward


torch.manual_seed(3)
gen = torch.Generator().manual_seed(4)
actor, critic = Actor(4, 2), Critic(4, 2)
actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-3)
critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)

for update in range(5):
    obs, act, reward = sample_batch(gen)
    q = critic(obs, act)
    critic_loss = ((q - reward) ** 2).mean()

    critic_opt.zero_grad()
    critic_loss.backward()
    critic_opt.step()

    actor_loss = -critic(obs, actor(obs)).mean()
    actor_opt.zero_grad()
    actor_loss.backward()
    actor_opt.step()
    print(update, critic_loss.item(), actor_loss.item())
