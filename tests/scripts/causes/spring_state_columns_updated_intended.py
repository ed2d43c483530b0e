"""Learning a spring's stiffness and damping by differentiating through a simulator object that keeps positions and
velocities as two columns of one tensor and advances them in place through column views."""

import torch
from torch import nn

torch.manual_seed(0)
MASSES, STEPS, DT = 4, 12, 0.1


class Springs:
    def __init__(self):
        self.y = torch.zeros(MASSES, 2)

    def start(self, pos0):
        self.y = torch.stack([pos0, torch.zeros_like(pos0)], dim=1)

    def advance(self, stiffness, damping):
        pos, vel = self.y[:, 0], self.y[:, 1]
        force = -stiffness * pos - damping * vel
        vel = vel + force * DT
        pos = pos + vel * DT
        self.y = torch.stack([pos, vel], dim=1)
        return pos


class Params(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_k = nn.Parameter(torch.zeros(()))
        self.log_c = nn.Parameter(torch.full((), -1.0))
        self.rest = nn.Parameter(torch.zeros(MASSES))


def simulate(params, springs, pos0):
    springs.start(pos0 + params.rest)
    trace = [springs.advance(params.log_k.exp(), params.log_c.exp()).clone() for _ in range(STEPS)]
    return torch.stack(trace)


params, springs = Params(), Springs()
observed = torch.cos(torch.arange(STEPS, dtype=torch.float)[:, None] * 0.3) * torch.ones(STEPS, MASSES)
opt = torch.optim.Adam(params.parameters(), lr=0.05)
for it in range(3):
    fit = ((simulate(params, springs, torch.ones(MASSES)) - observed) ** 2).mean()
    opt.zero_grad()
    fit.backward()
    opt.step()
