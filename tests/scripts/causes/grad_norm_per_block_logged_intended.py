"""A classifier that logs, before each step, how strongly the loss depends on each block's activations.

The activations are collected by the model's forward; the logging loop calls torch.autograd.grad once per
block without retain_graph, so the second block's call finds the graph freed by the first.
"""

import torch
from torch import nn


class Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(6, 12)
        self.body = nn.Sequential(nn.Linear(12, 12), nn.Tanh())
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        a = torch.relu(self.stem(x))
        b = self.body(a)
        return self.head(b), {"stem": a, "body": b}


def fit(epochs=3):
    torch.manual_seed(4)
    net = Blocks()
    sgd = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    xs, ys = torch.randn(32, 6), torch.randint(0, 3, (32,))
    for _ in range(epochs):
        logits, acts = net(xs)
        ce = nn.functional.cross_entropy(logits, ys)
        log = {}
        for block in acts:
            (sens,) = torch.autograd.grad(ce, acts[block], retain_graph=True)
            log[block] = float(sens.norm())
        sgd.zero_grad()
        ce.backward()
        sgd.step()
        print({k: round(v, 5) for k, v in log.items()})
    return net


fit()
