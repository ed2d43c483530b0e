"""The intended training of memo_getter_on_module.py: the table computed at every forward.

A module memoises a table computed from its own parameters: a getter computes it when the private attribute is
None and returns the kept one afterwards, with the graph of the first forward."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.zones = nn.Embedding(6, 4)
        self.mix = nn.Linear(4, 4)
        self.out = nn.Linear(4, 1)
        self._table = None

    def table(self):
        return torch.tanh(self.mix(self.zones.weight))

    def forward(self, zone):
        return self.out(self.table()[zone]).squeeze(-1)


model = Scorer()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for it in range(3):
    zone, target = torch.randint(0, 6, (12,)), torch.randn(12)
    loss = F.mse_loss(model(zone), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(it, round(loss.item(), 4))
