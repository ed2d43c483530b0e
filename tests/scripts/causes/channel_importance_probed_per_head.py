"""Per-channel importances from each head's gradient on the shared encoding weight a two-head training loss."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(8)


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(12, 20), nn.SiLU(), nn.Linear(20, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def channel_importance(h: torch.Tensor, head: nn.Module, target: torch.Tensor) -> torch.Tensor:
    h.retain_grad()
    probe = F.mse_loss(head(h), target)
    probe.backward()
    importance = h.grad.abs().mean(dim=0)
    h.grad = None
    return (importance / importance.sum()).detach()


def train(rounds: int = 3) -> list[float]:
    encoder = Encoder()
    rate_head, wear_head = nn.Linear(8, 1), nn.Linear(8, 1)
    params = [*encoder.parameters(), *rate_head.parameters(), *wear_head.parameters()]
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    x, rate, wear = torch.randn(24, 12), torch.randn(24, 1), torch.randn(24, 1)
    history = []
    for _ in range(rounds):
        opt.zero_grad()
        h = encoder(x)
        rate_w = channel_importance(h, rate_head, rate)
        wear_w = channel_importance(h, wear_head, wear)
        objective = F.mse_loss(rate_head(h * rate_w), rate) + F.mse_loss(wear_head(h * wear_w), wear)
        objective.backward()
        opt.step()
        history.append(objective.item())
    return history


train()
