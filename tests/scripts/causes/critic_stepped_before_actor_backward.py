"""Imagined rollouts: a dynamics model, a critic and an actor, each with its own optimizer. The critic is stepped on
its loss, then the actor's loss is backwarded through the critic's values of the same rollout."""

import torch
from torch import nn

torch.manual_seed(2)

dynamics = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))
critic = nn.Sequential(nn.Linear(4, 16), nn.ELU(), nn.Linear(16, 1))
actor = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
dyn_opt = torch.optim.Adam(dynamics.parameters(), lr=1e-3)
critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-3)

start = torch.randn(32, 4)
for it in range(3):
    state, values = start, []
    for t in range(4):
        action = actor(state)
        state = dynamics(torch.cat([state, action], dim=1))
        values.append(critic(state))
    returns = torch.stack(values).sum(0)
    critic_loss = ((returns - 1.0) ** 2).mean()
    critic_opt.zero_grad()
    critic_loss.backward(retain_graph=True)
    critic_opt.step()
    actor_loss = -returns.mean()
    actor_opt.zero_grad()
    actor_loss.backward()
    actor_opt.step()
