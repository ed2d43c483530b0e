"""An autoencoder's step is split into helpers: one backwards the reconstruction loss, the next backwards a prior
loss on the code through a small critic head, and the step function steps the one optimizer after both. Corrected: one
backward of the sum, then the step."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(41)


class AutoEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(10, 6), nn.Tanh(), nn.Linear(6, 3))
        self.dec = nn.Linear(3, 10)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        code = self.enc(x)
        return code, self.dec(code)


def reconstruction(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    rec = F.mse_loss(out, x)
    return rec


def prior(head: nn.Module, code: torch.Tensor) -> torch.Tensor:
    pri = head(code).pow(2).mean()
    return pri


def train_step(ae: AutoEncoder, head: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor) -> float:
    opt.zero_grad()
    code, out = ae(x)
    rec = reconstruction(out, x)
    pri = prior(head, code)
    (rec + pri).backward()
    opt.step()
    return rec.item() + pri.item()


ae, head = AutoEncoder(), nn.Linear(3, 2)
opt = torch.optim.Adam([*ae.parameters(), *head.parameters()], lr=1e-2)
for _ in range(3):
    train_step(ae, head, opt, torch.randn(12, 10))
