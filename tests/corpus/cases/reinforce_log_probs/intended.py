"""REINFORCE in the style of the PyTorch examples: the policy keeps its log-probs and rewards in lists."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

torch.manual_seed(9)
GAMMA = 0.99


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 24)
        self.affine2 = nn.Linear(24, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        return F.softmax(self.affine2(F.relu(self.affine1(x))), dim=-1)


policy = Policy()
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)


def select_action(state):
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def env_step(state, action):
    nxt = state + 0.1 * (action - 0.5) + 0.05 * torch.randn(4)
    return nxt, float(1.0 - nxt.abs().mean())


def finish_episode():
    R, returns = 0.0, []
    for r in policy.rewards[::-1]:
        R = r + GAMMA * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    policy_loss = []
    for log_prob, ret in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * ret)
    optimizer.zero_grad()
    policy_loss = torch.stack(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]


def main():
    for i_episode in range(5):
        state = torch.randn(4) * 0.1
        for t in range(10):
            action = select_action(state)
            state, reward = env_step(state, action)
            policy.rewards.append(reward)
        finish_episode()


if __name__ == "__main__":
    main()
