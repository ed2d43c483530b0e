"""A sequence classifier of two leaky integrator cells: each cell keeps its potential on itself across the time
steps of a sequence, and nothing clears it before the next sequence.

Intended: each sequence starts from rest (the cells cleared before its forward)."""

import torch
import torch.nn.functional as F
from torch import nn


class LeakyCell(nn.Module):
    def __init__(self, n, decay=0.8):
        super().__init__()
        self.inp = nn.Linear(n, n)
        self.decay = decay
        self.clear_state()

    def clear_state(self):
        self.mem = None

    def forward(self, xs):
        outs = []
        for x in xs:
            drive = self.inp(x)
            self.mem = drive if self.mem is None else self.decay * self.mem + drive
            outs.append(torch.sigmoid(self.mem))
        return torch.stack(outs)


class Readout(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = LeakyCell(5)
        self.second = LeakyCell(5)
        self.head = nn.Linear(5, 2)

    def forward(self, xs):
        return self.head(self.second(self.first(xs)).mean(0))


torch.manual_seed(41)
net = Readout()
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for seq, label in zip(torch.randn(3, 4, 6, 5), torch.randint(0, 2, (3, 6))):
    net.first.clear_state()
    net.second.clear_state()
    loss = F.cross_entropy(net(seq), label)
    opt.zero_grad()
    loss.backward()
    opt.step()
