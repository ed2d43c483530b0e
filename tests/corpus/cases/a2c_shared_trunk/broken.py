"""A2C on a toy bandit-like environment: one network with a shared trunk, an actor head and a critic head."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical


class ActorCritic(nn.Module):
    def __init__(self, obs_dim=6, n_actions=3, hidden=32):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU())
        self.pi = nn.Linear(hidden, n_actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.trunk(obs)
        return self.pi(h), self.v(h).squeeze(-1)


class ToyEnv:
    def __init__(self, n=8, obs_dim=6):
        self.n, self.obs_dim = n, obs_dim
        self.w = torch.randn(obs_dim, 3)

    def reset(self):
        self.obs = torch.randn(self.n, self.obs_dim)
        return self.obs

    def step(self, action):
        reward = (self.obs @ self.w).gather(1, action[:, None]).squeeze(1).tanh()
        self.obs = torch.randn(self.n, self.obs_dim)
        return self.obs, reward


def rollout(model, env, steps=5, gamma=0.9):
    obs = env.reset()
    log_probs, values, rewards = [], [], []
    for _ in range(steps):
        logits, value = model(obs)
        dist = Categorical(logits=logits)
        action = dist.sample()
        obs, reward = env.step(action)
        log_probs.append(dist.log_prob(action))
        values.append(value)
        rewards.append(reward)
    returns, R = [], torch.zeros(env.n)
    for r in reversed(rewards):
        R = r + gamma * R
        returns.insert(0, R)
    return torch.stack(log_probs), torch.stack(values), torch.stack(returns)


def train(updates=4):
    torch.manual_seed(3)
    env = ToyEnv()
    model = ActorCritic()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=7e-4)
    for update in range(updates):
        log_probs, values, returns = rollout(model, env)
        advantage = returns - values
        actor_loss = -(log_probs * advantage.detach()).mean()
        critic_loss = F.mse_loss(values, returns)

        optimizer.zero_grad()
        actor_loss.backward()
        critic_loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        print(update, actor_loss.item(), critic_loss.item())


if __name__ == "__main__":
    train()
