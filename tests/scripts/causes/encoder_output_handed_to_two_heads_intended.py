"""A shared trunk encodes each batch once; a classifier object and a regressor object each take the encoding,
backward their own loss and step their own head; the trunk's optimizer steps after both."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(13)


class Head:
    def __init__(self, out: int, kind: str) -> None:
        self.layer = nn.Linear(10, out)
        self.kind = kind
        self.opt = torch.optim.SGD(self.layer.parameters(), lr=0.05)

    def loss(self, code: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        pred = self.layer(code)
        return F.cross_entropy(pred, target) if self.kind == "class" else F.mse_loss(pred.squeeze(1), target)

    def learn(self, code: torch.Tensor, target: torch.Tensor) -> float:
        self.opt.zero_grad()
        err = self.loss(code, target)
        err.backward(retain_graph=True)
        self.opt.step()
        return err.item()


def train() -> None:
    trunk = nn.Sequential(nn.Linear(5, 10), nn.Tanh())
    trunk_opt = torch.optim.SGD(trunk.parameters(), lr=0.05)
    classify, regress = Head(3, "class"), Head(1, "value")
    for _ in range(3):
        x = torch.randn(12, 5)
        trunk_opt.zero_grad()
        code = trunk(x)
        classify.learn(code, torch.randint(0, 3, (12,)))
        regress.learn(code, torch.randn(12))
        trunk_opt.step()


train()
