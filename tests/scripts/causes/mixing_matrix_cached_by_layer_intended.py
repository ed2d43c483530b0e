"""Learned token mixing: a layer turns its learnable logits into a row-stochastic mixing matrix, and keeps the
matrix after the first forward so later forwards can reuse it; it has a method to drop that cache."""

import torch
from torch import nn

torch.manual_seed(8)


class SoftMixer(nn.Module):
    def __init__(self, tokens):
        super().__init__()
        self.logits = nn.Parameter(torch.randn(tokens, tokens))
        self.mixing = None

    def drop_cache(self):
        self.mixing = None

    def matrix(self):
        if self.mixing is not None:
            return self.mixing
        mixing = torch.softmax(self.logits, dim=-1)
        self.mixing = mixing
        return mixing

    def forward(self, x):
        return self.matrix() @ x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.mix = SoftMixer(6)
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        return self.out(torch.relu(self.mix(x))).squeeze(-1)


net = Net()
sgd = torch.optim.SGD(net.parameters(), lr=0.05)
x, y = torch.randn(6, 4), torch.randn(6)
for it in range(4):
    err = ((net(x) - y) ** 2).mean()
    sgd.zero_grad()
    err.backward()
    net.mix.drop_cache()
    sgd.step()
