"""A stochastic controller trained through differentiable dynamics: the policy's Gaussian over forces is sampled
inside act(), the point mass is stepped forward, and the loss is the distance of the reached state to the goal."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal

torch.manual_seed(0)


class GaussianPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 4))

    def act(self, state):
        mean, log_std = self.body(state).chunk(2, dim=-1)
        return Normal(mean, log_std.clamp(-3, 1).exp()).rsample()


def simulate(state, force, dt=0.1):
    pos, vel = state.chunk(2, dim=-1)
    vel = vel + dt * force
    return torch.cat([pos + dt * vel, vel], dim=-1)


policy = GaussianPolicy()
optim = torch.optim.Adam(policy.parameters(), lr=1e-2)
goal = torch.tensor([1.0, -0.5])
for episode in range(3):
    state = torch.zeros(32, 4)
    for t in range(5):
        state = simulate(state, policy.act(state))
    distance = F.mse_loss(state[:, :2], goal.expand(32, 2))
    optim.zero_grad()
    distance.backward()
    optim.step()
