"""A gated MLP regressor whose per-output gain is kept as a log and exponentiated once, in the constructor."""

import torch
import torch.nn as nn

torch.manual_seed(0)


class GainHead(nn.Module):
    def __init__(self, features, outputs):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 16), nn.Tanh(), nn.Linear(16, outputs))
        self.log_gain = nn.Parameter(torch.zeros(outputs))
        self.gain = self.log_gain.exp()

    def forward(self, x):
        return self.body(x) * self.gain


def train(net, batches):
    optimiser = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    for inputs, targets in batches:
        optimiser.zero_grad()
        err = nn.functional.smooth_l1_loss(net(inputs), targets)
        err.backward()
        optimiser.step()


data = [(torch.randn(12, 6), torch.randn(12, 3)) for _ in range(4)]
train(GainHead(6, 3), data)
