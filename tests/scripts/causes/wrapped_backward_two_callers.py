"""A trainer routes every backward through its own helper; a consistency regulariser calls the helper, then the
training step calls it again on the same loss: one line of code runs backward twice through one graph."""

import torch
from torch import nn


class Runner:
    def __init__(self, net):
        self.net = net
        self.opt = torch.optim.SGD(net.parameters(), lr=0.05)

    def run_backward(self, value):
        value.backward()

    def regularised(self, x, y):
        a, b = self.net(x), self.net(x + 0.01)
        total = nn.functional.mse_loss(a, y) + 0.1 * (a - b).pow(2).mean()
        self.run_backward(total)
        return total

    def train_step(self, x, y):
        self.opt.zero_grad()
        total = self.regularised(x, y)
        self.run_backward(total)
        self.opt.step()


torch.manual_seed(23)
runner = Runner(nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 1)))
for _ in range(3):
    runner.train_step(torch.randn(5, 3), torch.randn(5, 1))
