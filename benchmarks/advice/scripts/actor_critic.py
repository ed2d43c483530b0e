"""RL: advantage actor-critic on a toy contextual chain, two networks and two optimizers kept in a list."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

torch.manual_seed(0)

N_ACTIONS, OBS, HORIZON, GAMMA = 3, 4, 5, 0.9


class ToyEnv:
    """The reward is the observation's entry at the chosen action; observations drift with the action."""

    def __init__(self, n_envs):
        self.n_envs = n_envs

    def reset(self):
        self.obs = torch.randn(self.n_envs, OBS)
        return self.obs

    def step(self, action):
        reward = self.obs.gather(1, action[:, None]).squeeze(1)
        self.obs = 0.8 * self.obs + 0.2 * torch.randn(self.n_envs, OBS)
        self.obs[:, N_ACTIONS] = action.float() / N_ACTIONS
        return self.obs, reward


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS, 32), nn.Tanh(), nn.Linear(32, N_ACTIONS))

    def forward(self, obs):
        return Categorical(logits=self.body(obs))


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, obs):
        return self.body(obs).squeeze(-1)


def discounted_returns(rewards, gamma=GAMMA):
    returns, running = [], torch.zeros_like(rewards[0])
    for r in reversed(rewards):
        running = r + gamma * running
        returns.insert(0, running)
    return torch.stack(returns)


def rollout(env, actor, critic):
    obs = env.reset()
    log_probs, values, rewards, entropies = [], [], [], []
    for _ in range(HORIZON):
        dist = actor(obs)
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        entropies.append(dist.entropy())
        values.append(critic(obs))
        obs, reward = env.step(action)
        rewards.append(reward)
    return torch.stack(log_probs), torch.stack(values), rewards, torch.stack(entropies)


def main():
    env = ToyEnv(n_envs=16)
    actor, critic = Actor(), Critic()
    optimizers = [torch.optim.Adam(actor.parameters(), lr=3e-3), torch.optim.Adam(critic.parameters(), lr=1e-2)]
    for update in range(8):
        log_probs, values, rewards, entropies = rollout(env, actor, critic)
        returns = discounted_returns(rewards)
        advantage = (returns - values).detach()
        critic_loss = F.mse_loss(values, returns)
        actor_loss = -(log_probs * advantage).mean() - 0.01 * entropies.mean()
        for opt in optimizers:
            opt.zero_grad()
        critic_loss.backward()
        actor_loss.backward()
        for opt in optimizers:
            opt.step()
        if update % 4 == 3:
            print(f"update {update}: return {returns[0].mean().item():.3f} critic loss {critic_loss.item():.3f}")


if __name__ == "__main__":
    main()
