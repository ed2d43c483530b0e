"""A trainer tunes only the last layer of its network; past a warm-up it also takes a regularisation step on
that layer inside an `if`, after the batch's forward was computed above the `if`."""

import torch
import torch.nn.functional as F
from torch import nn


class Tuner:
    def __init__(self):
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
        self.opt = torch.optim.SGD(self.net[2].parameters(), lr=0.1)

    def fit(self, batches, warm=1):
        for i, (x, y) in enumerate(batches):
            if i >= warm:
                reg = self.net[2].weight.pow(2).sum() * 1e-2
                self.opt.zero_grad()
                reg.backward()
                self.opt.step()
            out = self.net(x)
            ce = F.cross_entropy(out, y)
            self.opt.zero_grad()
            ce.backward()
            self.opt.step()


torch.manual_seed(37)
Tuner().fit([(torch.randn(6, 4), torch.randint(0, 3, (6,))) for _ in range(3)])
