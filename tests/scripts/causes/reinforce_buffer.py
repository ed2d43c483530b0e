"""REINFORCE whose episode buffers are never cleared."""

import torch
from torch import nn

torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
log_probs, rewards = [], []

for episode in range(3):
    for t in range(4):
        state = torch.randn(4)
        dist = torch.distributions.Categorical(logits=policy(state))
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        rewards.append(float(action) - 0.5)
    returns = torch.tensor(rewards)
    loss = -(torch.stack(log_probs) * returns).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
