"""A tabular regressor whose blocks are built from a settings object; the settings turn the activations in place
to save memory, and one block's activation follows a Tanh."""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(5)


@dataclass
class Settings:
    width: int = 16
    squash_then_clip: bool = True
    act_in_place: bool = True


def block(n_in: int, n_out: int, settings: Settings) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Linear(n_in, n_out)]
    if settings.squash_then_clip:
        layers.append(nn.Tanh())
    layers.append(nn.ReLU(inplace=settings.act_in_place))
    return nn.Sequential(*layers)


settings = Settings()
regressor = nn.Sequential(block(7, settings.width, settings), nn.Linear(settings.width, 1))
sgd = torch.optim.SGD(regressor.parameters(), lr=0.05)

for _ in range(4):
    rows, target = torch.randn(32, 7), torch.randn(32, 1)
    err = F.mse_loss(regressor(rows), target)
    sgd.zero_grad()
    err.backward()
    sgd.step()
