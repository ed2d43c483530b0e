"""A value head with a weight-normalised output layer (the deprecated ``nn.utils.weight_norm``), trained through a
functional path that calls ``F.linear`` with the layer's ``weight`` instead of calling the layer: the pre-hook that
computes ``weight`` from ``weight_g`` and ``weight_v`` never runs, so every step reads the weight computed when the
norm was applied, with its graph, which the first backward frees.
"""

import torch
import torch.nn.functional as F
from torch import nn


class ValueHead(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(dim, 16), nn.Tanh())
        self.out = nn.utils.parametrizations.weight_norm(nn.Linear(16, 1))

    def forward(self, obs):
        return self.out(self.trunk(obs))

    def value(self, obs):
        return F.linear(self.trunk(obs), self.out.weight, self.out.bias).squeeze(-1)


def fit(head, batches):
    opt = torch.optim.RMSprop(head.parameters(), lr=1e-3)
    for obs, ret in batches:
        td = (head.value(obs) - ret).pow(2).mean()
        opt.zero_grad()
        td.backward()
        opt.step()


torch.manual_seed(8)
critic = ValueHead(5)
fit(critic, [(torch.randn(10, 5), torch.randn(10)) for _ in range(4)])
print(f"{critic.out.bias.item():.6f}")
