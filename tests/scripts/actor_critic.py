"""Actor-critic: the critic steps before the actor's backward goes through the critic."""

import torch
from torch import nn

torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
critic = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
opt_actor = torch.optim.Adam(actor.parameters(), lr=1e-3)
opt_critic = torch.optim.Adam(critic.parameters(), lr=1e-3)
state, reward = torch.randn(8, 4), torch.randn(8, 1)

dist = torch.distributions.Categorical(logits=actor(state))
action = dist.sample()
advantage = reward - critic(state)
critic_loss = advantage.pow(2).mean()
actor_loss = -(dist.log_prob(action).unsqueeze(1) * advantage).mean()
critic_loss.backward(retain_graph=True)
opt_critic.step()
actor_loss.backward()
opt_actor.step()
