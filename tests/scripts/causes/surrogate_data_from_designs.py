"""A surrogate fitted to designs that an earlier optimisation moved by gradient: the data object keeps inputs and
targets computed from the designs, which still require grad."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def simulate(designs):
    return (designs**2).sum(1, keepdim=True) + torch.sin(designs[:, :1])


class SurrogateData:
    def __init__(self, designs):
        self.inputs = designs * 2.0 - 1.0
        self.outputs = simulate(designs) / 3.0


designs = torch.rand(30, 3, requires_grad=True)
for _ in range(3):
    (g,) = torch.autograd.grad(simulate(designs).sum(), designs)
    with torch.no_grad():
        designs -= 0.05 * g

data = SurrogateData(designs)
surrogate = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(surrogate.parameters(), lr=1e-2)
for epoch in range(3):
    pick = torch.randperm(30)[:10]
    fit = F.mse_loss(surrogate(data.inputs[pick]), data.outputs[pick])
    opt.zero_grad()
    fit.backward()
    opt.step()
