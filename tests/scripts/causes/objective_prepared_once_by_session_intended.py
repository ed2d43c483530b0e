"""A session prepares its objective once from its feed, then each step swaps the feed and backwards the objective."""

import torch
from torch import nn

torch.manual_seed(6)


class Session:
    def __init__(self, net: nn.Module) -> None:
        self.net = net
        self.sgd = torch.optim.SGD(net.parameters(), lr=0.05)
        self.feed = torch.zeros(5, 4)
        self.label = torch.zeros(5, 2)
        self.cost = None

    def prepare(self) -> None:
        self.cost = (self.net(self.feed) - self.label).pow(2).mean()

    def run_step(self, xb: torch.Tensor, yb: torch.Tensor) -> float:
        self.feed, self.label = xb, yb
        self.sgd.zero_grad()
        self.prepare()
        self.cost.backward()
        self.sgd.step()
        return self.cost.item()


net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
session = Session(net)
session.prepare()
for _ in range(3):
    session.run_step(torch.randn(5, 4), torch.randn(5, 2))
