"""PPO with a learned reward network that weights several reward signals (PPO-PyTorch layout).

Source: https://github.com/metaopt/torchopt/issues/221

The author trains a PPO agent (actor-critic, clipped surrogate, K_epochs of
updates per rollout, one Adam over actor and critic) on an environment that
returns a vector of reward signals. A reward network maps each state to
weights over those signals; the scalar reward is their weighted sum, and the
discounted, normalised returns are built from it in `update()`. In the report
the reward network is meta-learned with torchopt in an outer loop; that outer
update is left out of this reduction. Synthetic environment, CPU.
"""

import torch
import torch.nn as nn
from torch.distributions import Categorical

STATE_DIM = 4
N_ACTIONS = 3
N_REWARDS = 2
EPISODE_LEN = 8
UPDATE_EVERY = 16


class ToyEnv:
    """A random walk whose reward is a vector of two objectives."""

    def __init__(self):
        self.t = 0
        self.state = torch.zeros(STATE_DIM)

    def reset(self):
        self.t = 0
        self.state = torch.randn(STATE_DIM)
        return self.state.numpy()

    def step(self, action):
        self.t += 1
        self.state = 0.9 * self.state + 0.1 * torch.randn(STATE_DIM)
        self.state[action % STATE_DIM] += 0.5
        reward_g = [float(self.state[0]), float(-self.state[1].abs())]
        done = self.t >= EPISODE_LEN
        return self.state.numpy(), reward_g, done


class RolloutBuffer:
    def __init__(self):
        self.actions, self.states, self.logprobs, self.rewards_g, self.is_terminals = [], [], [], [], []

    def clear(self):
        del self.actions[:], self.states[:], self.logprobs[:], self.rewards_g[:], self.is_terminals[:]


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.actor = nn.Sequential(nn.Linear(STATE_DIM, 32), nn.Tanh(), nn.Linear(32, N_ACTIONS), nn.Softmax(dim=-1))
        self.critic = nn.Sequential(nn.Linear(STATE_DIM, 32), nn.Tanh(), nn.Linear(32, 1))

    def act(self, state):
        dist = Categorical(self.actor(state))
        action = dist.sample()
        return action.detach(), dist.log_prob(action).detach()

    def evaluate(self, state, action):
        dist = Categorical(self.actor(state))
        return dist.log_prob(action), self.critic(state), dist.entropy()


class RewardNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(STATE_DIM, 16), nn.ReLU(), nn.Linear(16, N_REWARDS))

    def forward(self, state):
        return torch.softmax(self.net(state), dim=-1)


class PPO:
    def __init__(self, lr_actor=3e-4, lr_critic=1e-3, gamma=0.99, K_epochs=4, eps_clip=0.2):
        self.gamma = gamma
        self.eps_clip = eps_clip
        self.K_epochs = K_epochs
        self.buffer = RolloutBuffer()
        self.policy = ActorCritic()
        self.optimizer = torch.optim.Adam(
            [
                {"params": self.policy.actor.parameters(), "lr": lr_actor},
                {"params": self.policy.critic.parameters(), "lr": lr_critic},
            ]
        )
        self.policy_old = ActorCritic()
        self.policy_old.load_state_dict(self.policy.state_dict())
        self.rewardnet = RewardNet()
        self.MseLoss = nn.MSELoss()

    def select_action(self, state):
        with torch.no_grad():
            state = torch.FloatTensor(state)
            action, action_logprob = self.policy_old.act(state)
        self.buffer.states.append(state)
        self.buffer.actions.append(action)
        self.buffer.logprobs.append(action_logprob)
        return action.item()

    def update(self):
        # Monte Carlo estimate of returns, with the learned reward weighting
        rewards_g = []
        discounted_reward = 0
        for reward_g, is_terminal, state in zip(
            reversed(self.buffer.rewards_g), reversed(self.buffer.is_terminals), reversed(self.buffer.states)
        ):
            if is_terminal:
                discounted_reward = 0
            with torch.no_grad():
                w = self.rewardnet(state)
            r = torch.dot(w, torch.FloatTensor(reward_g))
            discounted_reward = r + (self.gamma * discounted_reward)
            rewards_g.insert(0, discounted_reward)

        rewards_g = torch.stack(rewards_g)
        rewards_g = (rewards_g - rewards_g.mean()) / (rewards_g.std() + 1e-7)

        old_states = torch.stack(self.buffer.states).detach()
        old_actions = torch.stack(self.buffer.actions).detach()
        old_logprobs = torch.stack(self.buffer.logprobs).detach()

        for _ in range(self.K_epochs):
            logprobs, state_values, dist_entropy = self.policy.evaluate(old_states, old_actions)
            state_values = torch.squeeze(state_values)
            ratios = torch.exp(logprobs - old_logprobs)
            advantages = rewards_g - state_values.detach()
            surr1 = ratios * advantages
            surr2 = torch.clamp(ratios, 1 - self.eps_clip, 1 + self.eps_clip) * advantages
            loss = -torch.min(surr1, surr2) + 0.5 * self.MseLoss(state_values, rewards_g) - 0.01 * dist_entropy

            self.optimizer.zero_grad()
            loss.mean().backward()
            self.optimizer.step()

        self.policy_old.load_state_dict(self.policy.state_dict())
        self.buffer.clear()


def main():
    torch.manual_seed(0)
    env = ToyEnv()
    agent = PPO()
    time_step = 0
    for episode in range(6):
        state = env.reset()
        for _ in range(EPISODE_LEN):
            action = agent.select_action(state)
            state, reward_g, done = env.step(action)
            agent.buffer.rewards_g.append(reward_g)
            agent.buffer.is_terminals.append(done)
            time_step += 1
            if time_step % UPDATE_EVERY == 0:
                agent.update()
            if done:
                break
        print(f"episode {episode} done at step {time_step}")


if __name__ == "__main__":
    main()
