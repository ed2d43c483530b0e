"""A memory bank of recent estimates kept on the model in a bounded deque of records (estimate, label): each forward
appends this batch's estimates with their graph and computes the loss over the whole bank, so the second backward
goes through the first batch's freed graph. A second deque keeps a momentum encoder's estimates, without a graph."""

import collections
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
Entry = collections.namedtuple("Entry", ["score", "label"])


class Banked(nn.Module):
    def __init__(self):
        super().__init__()
        self.online = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        self.slow = copy.deepcopy(self.online)
        for p in self.slow.parameters():
            p.requires_grad_(False)
        self.recent = collections.deque(maxlen=16)
        self.archive = collections.deque(maxlen=64)

    def forward(self, x, y):
        for rec in zip(self.online(x).squeeze(-1), y):
            self.recent.append(Entry(*rec))
        bank = list(self.archive) + list(self.recent)
        loss = F.mse_loss(torch.stack([e.score for e in bank]), torch.stack([e.label for e in bank]))
        with torch.no_grad():
            for rec in zip(self.slow(x).squeeze(-1), y):
                self.archive.append(Entry(*rec))
        return loss


model = Banked()
opt = torch.optim.SGD(model.online.parameters(), lr=0.05)
for it in range(3):
    x, y = torch.randn(8, 4), torch.randn(8)
    bank_loss = model(x, y)
    opt.zero_grad()
    bank_loss.backward()
    opt.step()
    print(it, round(bank_loss.item(), 4))
