"""DQN agent with prioritized experience replay (PER) on a CartPole-like task.

Reduced from https://github.com/BY571/DQN-Atari-Agents/issues/5: the author runs
``run_atari_dqn.py -env CartPole-v0 -agent dqn+per``. The agent keeps a local and a target
Q-network, samples transitions from a proportional prioritized buffer with importance-sampling
weights, updates the priorities from the TD errors, and soft-updates the target network after
each learning step. A random linear environment stands in for gym's CartPole.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)
np.random.seed(0)

STATE_SIZE = 4
ACTION_SIZE = 2
BATCH_SIZE = 16
GAMMA = 0.99
TAU = 1e-2


class QNetwork(nn.Module):
    def __init__(self, state_size, action_size, layer_size=32):
        super().__init__()
        self.head = nn.Linear(state_size, layer_size)
        self.ff = nn.Linear(layer_size, action_size)

    def forward(self, x):
        return self.ff(torch.relu(self.head(x)))


class PrioritizedReplay:
    def __init__(self, capacity, alpha=0.6, beta_start=0.4, beta_frames=1000):
        self.capacity = capacity
        self.alpha = alpha
        self.beta_start = beta_start
        self.beta_frames = beta_frames
        self.frame = 1
        self.buffer = []
        self.pos = 0
        self.priorities = np.zeros((capacity,), dtype=np.float32)

    def beta_by_frame(self, frame_idx):
        return min(1.0, self.beta_start + frame_idx * (1.0 - self.beta_start) / self.beta_frames)

    def add(self, state, action, reward, next_state, done):
        max_prio = self.priorities.max() if self.buffer else 1.0
        if len(self.buffer) < self.capacity:
            self.buffer.append((state, action, reward, next_state, done))
        else:
            self.buffer[self.pos] = (state, action, reward, next_state, done)
        self.priorities[self.pos] = max_prio
        self.pos = (self.pos + 1) % self.capacity

    def sample(self, batch_size):
        prios = self.priorities[: len(self.buffer)]
        probs = prios**self.alpha
        probs /= probs.sum()
        indices = np.random.choice(len(self.buffer), batch_size, p=probs)
        samples = [self.buffer[idx] for idx in indices]
        beta = self.beta_by_frame(self.frame)
        self.frame += 1
        weights = (len(self.buffer) * probs[indices]) ** (-beta)
        weights /= weights.max()
        states, actions, rewards, next_states, dones = zip(*samples)
        return (
            np.stack(states),
            np.array(actions),
            np.array(rewards, dtype=np.float32),
            np.stack(next_states),
            np.array(dones, dtype=np.float32),
            indices,
            np.array(weights, dtype=np.float32),
        )

    def update_priorities(self, batch_indices, batch_priorities):
        for idx, prio in zip(batch_indices, batch_priorities):
            self.priorities[idx] = abs(prio)

    def __len__(self):
        return len(self.buffer)


class DQNAgent:
    def __init__(self):
        self.qnetwork_local = QNetwork(STATE_SIZE, ACTION_SIZE)
        self.qnetwork_target = QNetwork(STATE_SIZE, ACTION_SIZE)
        self.qnetwork_target.load_state_dict(self.qnetwork_local.state_dict())
        self.optimizer = optim.Adam(self.qnetwork_local.parameters(), lr=1e-3)
        self.memory = PrioritizedReplay(capacity=1000)

    def act(self, state, eps):
        if np.random.rand() > eps:
            with torch.no_grad():
                q = self.qnetwork_local(torch.from_numpy(state).float().unsqueeze(0))
            return int(q.argmax(1).item())
        return int(np.random.randint(ACTION_SIZE))

    def step(self, state, action, reward, next_state, done):
        self.memory.add(state, action, reward, next_state, done)
        if len(self.memory) > BATCH_SIZE:
            return self.learn_per(self.memory.sample(BATCH_SIZE))
        return None

    def learn_per(self, experiences):
        self.optimizer.zero_grad()
        states, actions, rewards, next_states, dones, idx, weights = experiences

        states = torch.FloatTensor(states)
        next_states = torch.FloatTensor(next_states)
        actions = torch.LongTensor(actions).unsqueeze(1)
        rewards = torch.FloatTensor(rewards).unsqueeze(1)
        dones = torch.FloatTensor(dones).unsqueeze(1)
        weights = torch.FloatTensor(weights).unsqueeze(1)

        q_targets_next = self.qnetwork_target(next_states).detach().max(1)[0].unsqueeze(1)
        q_targets = rewards + (GAMMA * q_targets_next * (1 - dones))
        q_expected = self.qnetwork_local(states).gather(1, actions)
        td_error = q_targets - q_expected
        loss = (td_error.pow(2) * weights).mean()
        loss.backward()
        self.optimizer.step()

        self.soft_update(self.qnetwork_local, self.qnetwork_target)
        self.memory.update_priorities(idx, abs(td_error.data.numpy()).ravel() + 1e-6)
        return loss.detach().numpy()

    def soft_update(self, local_model, target_model):
        for target_param, local_param in zip(target_model.parameters(), local_model.parameters()):
            target_param.data.copy_(TAU * local_param.data + (1.0 - TAU) * target_param.data)


class ToyEnv:
    def __init__(self):
        self.w = np.random.randn(STATE_SIZE, STATE_SIZE).astype(np.float32) * 0.3

    def reset(self):
        self.t = 0
        self.s = np.random.randn(STATE_SIZE).astype(np.float32) * 0.1
        return self.s

    def step(self, action):
        self.t += 1
        self.s = np.tanh(self.w @ self.s + (0.1 if action else -0.1)).astype(np.float32)
        reward = 1.0 - float(abs(self.s[0]))
        return self.s, reward, self.t >= 20, {}


def run(frames=60, eps=0.5):
    env, agent = ToyEnv(), DQNAgent()
    state = env.reset()
    for frame in range(frames):
        action = agent.act(state, eps)
        next_state, reward, done, _ = env.step(action)
        loss = agent.step(state, action, reward, next_state, done)
        state = env.reset() if done else next_state
        if loss is not None and frame % 20 == 0:
            print(frame, float(np.mean(loss)))


if __name__ == "__main__":
    run()
