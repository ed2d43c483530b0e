"""A net scored after each of its stages: a helper rescales each stage's output before the error (out of place)."""

import torch
from torch import nn


class Staged(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stages = nn.ModuleList([nn.Linear(6, 6) for _ in range(3)])

    def forward(self, x):
        outs = []
        for stage in self.stages:
            x = torch.tanh(stage(x))
            outs.append(x)
        return torch.stack(outs)


def stage_error(pred, target, weight):
    pred = pred * weight
    return (pred - target).pow(2).mean()


torch.manual_seed(23)
net = Staged()
sgd = torch.optim.SGD(net.parameters(), lr=0.1)
weight = torch.linspace(0.5, 1.5, 6)
for inputs, target in zip(torch.randn(3, 8, 6), torch.randn(3, 8, 6)):
    total = 0
    for pred in net(inputs):
        total = total + stage_error(pred, target, weight)
    sgd.zero_grad()
    total.backward()
    sgd.step()
