"""Two stacked GRU cells over a short sequence whose initial hidden states are learned: one parameter holds both
layers' states, split per layer in the forward, and each part's leading axis is squeezed away in place. The parts
are outputs of one split, and torch refuses to write into any of them.
"""

import torch
from torch import nn


class StackedGRU(nn.Module):
    def __init__(self, size, hidden):
        super().__init__()
        self.first = nn.GRUCell(size, hidden)
        self.second = nn.GRUCell(hidden, hidden)
        self.start = nn.Parameter(0.1 * torch.randn(2, 1, hidden))
        self.readout = nn.Linear(hidden, 1)

    def forward(self, seq):
        low, high = self.start.split(1, dim=0)
        low = low.squeeze_(0).expand(seq.shape[1], -1)
        high = high.squeeze_(0).expand(seq.shape[1], -1)
        for step in seq:
            low = self.first(step, low)
            high = self.second(low, high)
        return self.readout(high).squeeze(-1)


def main():
    torch.manual_seed(3)
    net = StackedGRU(4, 10)
    opt = torch.optim.RMSprop(net.parameters(), lr=1e-2)
    for _ in range(4):
        seq = torch.randn(5, 8, 4)
        target = seq.sum(dim=(0, 2))
        loss = (net(seq) - target).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(round(loss.item(), 5))


main()
