"""Two losses stepped one after the other read the encoding through a per-batch lazy store that keeps what it made."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(4)


class LazyFeatures:
    def __init__(self, encoder: nn.Module, x: torch.Tensor) -> None:
        self.encoder = encoder
        self.x = x
        self.made = {}

    def fetch(self, key: str) -> torch.Tensor:
        if key not in self.made:
            self.made[key] = self.encoder(self.x) if key == "code" else self.fetch("code").pow(2)
        return self.made[key]


def main(steps: int = 3) -> None:
    encoder = nn.Sequential(nn.Linear(7, 12), nn.Tanh())
    cls_head, reg_head = nn.Linear(12, 2), nn.Linear(12, 1)
    opt_cls = torch.optim.SGD([*encoder.parameters(), *cls_head.parameters()], lr=0.1)
    opt_reg = torch.optim.SGD(reg_head.parameters(), lr=0.1)
    for _ in range(steps):
        x, c, r = torch.randn(10, 7), torch.randint(0, 2, (10,)), torch.randn(10, 1)
        feats = LazyFeatures(encoder, x)
        opt_cls.zero_grad()
        cls_loss = F.cross_entropy(cls_head(feats.fetch("code")), c)
        cls_loss.backward()
        opt_cls.step()
        feats = LazyFeatures(encoder, x)
        opt_reg.zero_grad()
        reg_loss = F.mse_loss(reg_head(feats.fetch("energy")), r)
        reg_loss.backward()
        opt_reg.step()


main()
