"""Reduced from https://github.com/QasimWani/RL-Unity/issues/2

The author was training a DQN agent (local and target Q-networks with a soft update, a replay
buffer, epsilon-greedy actions) on Unity's Banana navigation task (37-dimensional state, 4
actions). The first learning step raised "element 0 of tensors does not require grad and does not
have a grad_fn" at `loss.backward()` in Agent.train: the Q-values of the local network, the one the
optimizer trains, were taken with `.detach()` like the target network's, so Q_expected and the loss
carry no graph. The author's fix (the next commits of the repository) computes
`Q_expected = self.qnetwork_local(states).gather(1, actions)` without the detach; the target
network's values stay detached.

Here: the same agent on a small synthetic environment with the Banana task's shapes (a random
linear reward over a 37-dimensional state), seeded, on CPU. The reduction keeps the detach as the
report has it and leaves out the report's unrelated shape juggling (`unsqueeze(0)`, debug prints).
"""
import random
from collections import deque, namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)
random.seed(0)
np.random.seed(0)

BUFFER_SIZE = 10000
BATCH_SIZE = 32
TAU = 1e-3


class DQNetwork(nn.Module):
    def __init__(self, input_features, output_features):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(i, o) for i, o in zip(input_features, output_features))

    def forward(self, state):
        x = state
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return self.layers[-1](x)


class ReplayBuffer:
    def __init__(self, buffer_size, batch_size):
        self.memory = deque(maxlen=buffer_size)
        self.batch_size = batch_size
        self.experience = namedtuple("Experience", ["state", "action", "reward", "next_state", "done"])

    def add(self, transition):
        self.memory.append(self.experience(*transition))

    def sample(self):
        experiences = random.sample(self.memory, k=self.batch_size)
        states = torch.from_numpy(np.vstack([e.state for e in experiences])).float()
        actions = torch.from_numpy(np.vstack([e.action for e in experiences])).long()
        rewards = torch.from_numpy(np.vstack([e.reward for e in experiences])).float()
        next_states = torch.from_numpy(np.vstack([e.next_state for e in experiences])).float()
        dones = torch.from_numpy(np.vstack([e.done for e in experiences]).astype(np.uint8)).float()
        return states, actions, rewards, next_states, dones

    def __len__(self):
        return len(self.memory)


class Agent:
    """DQN agent with a fixed Q-target network and a replay buffer."""

    def __init__(self, state_size=37, action_size=4, gamma=0.99, lr=0.001, update_every=4):
        self.state_size = state_size
        self.action_size = action_size
        self.input_features = [state_size, 128, 64, 32]
        self.output_features = [128, 64, 32, action_size]
        self.gamma = gamma
        self.qnetwork_local = DQNetwork(self.input_features, self.output_features)
        self.qnetwork_target = DQNetwork(self.input_features, self.output_features)
        self.optimizer = optim.Adam(self.qnetwork_local.parameters(), lr=lr)
        self.memory = ReplayBuffer(BUFFER_SIZE, BATCH_SIZE)
        self.update_every = update_every
        self.t_step = 0

    def step(self, transition):
        self.memory.add(transition)
        self.t_step = (self.t_step + 1) % self.update_every
        if self.t_step == 0 and len(self.memory) > BATCH_SIZE:
            experiences = self.memory.sample()
            self.train(experiences)

    def get_action(self, state, eps=0.0):
        state = torch.from_numpy(state).float().unsqueeze(0)
        self.qnetwork_local.eval()
        with torch.no_grad():
            action_values = self.qnetwork_local(state)
        self.qnetwork_local.train()
        if random.random() > eps:
            return int(np.argmax(action_values.cpu().data.numpy()))
        return random.choice(np.arange(self.action_size))

    def train(self, experiences):
        states, actions, rewards, next_states, dones = experiences

        Q_targets_next = self.qnetwork_target(next_states).detach().max(1)[0].unsqueeze(1)
        Q_targets = rewards + (self.gamma * Q_targets_next * (1 - dones))
        qexp = self.qnetwork_local(states).detach()
        Q_expected = qexp.gather(1, actions)

        loss = F.mse_loss(Q_expected, Q_targets)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()

        self.soft_update(self.qnetwork_local, self.qnetwork_target, TAU)

    def soft_update(self, local_model, target_model, tau):
        for target_param, local_param in zip(target_model.parameters(), local_model.parameters()):
            target_param.data.copy_(tau * local_param.data + (1.0 - tau) * target_param.data)


class BananaLikeEnv:
    """37-dimensional observations, 4 actions, a reward linear in the observation."""

    def __init__(self, state_size=37, action_size=4):
        self.w = np.random.randn(action_size, state_size) * 0.1
        self.state_size = state_size

    def reset(self):
        self.t = 0
        self.state = np.random.randn(self.state_size)
        return self.state

    def step(self, action):
        reward = float(self.w[action] @ self.state > 0.0)
        self.state = np.tanh(self.state + 0.1 * np.random.randn(self.state_size))
        self.t += 1
        return self.state, reward, self.t >= 100


def dqn(agent, env, n_episodes=5, eps_start=1.0, eps_end=0.01, eps_decay=0.995):
    scores = []
    eps = eps_start
    for i_episode in range(1, n_episodes + 1):
        state = env.reset()
        score = 0
        while True:
            action = agent.get_action(state, eps)
            next_state, reward, done = env.step(action)
            agent.step((state, action, reward, next_state, done))
            state = next_state
            score += reward
            if done:
                break
        scores.append(score)
        eps = max(eps_end, eps_decay * eps)
        print(f"Episode {i_episode}\tScore: {score:.2f}")
    return scores


if __name__ == "__main__":
    env = BananaLikeEnv()
    agent = Agent()
    dqn(agent, env)
