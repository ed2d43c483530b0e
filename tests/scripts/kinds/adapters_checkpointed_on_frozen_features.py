"""Adapters trained on top of a frozen encoder, each adapter block run through the reentrant checkpoint to save
memory: the features entering the blocks do not require grad, so the checkpoint builds no graph."""

import torch
from torch import nn
from torch.utils import checkpoint as ckpt


class Adapted(nn.Module):
    def __init__(self, dim=8, blocks=2):
        super().__init__()
        self.encoder = nn.Linear(dim, dim).requires_grad_(False)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(dim, dim), nn.GELU()) for _ in range(blocks))
        self.head = nn.Linear(dim, 1).requires_grad_(False)

    def forward(self, x):
        h = self.encoder(x)
        for block in self.blocks:
            h = ckpt.checkpoint(block, h, use_reentrant=True)
        return self.head(h)


torch.manual_seed(47)
adapted = Adapted()
opt = torch.optim.AdamW([p for p in adapted.parameters() if p.requires_grad], lr=1e-3)
for _ in range(3):
    x, y = torch.randn(5, 8), torch.randn(5, 1)
    mse = (adapted(x) - y).pow(2).mean()
    opt.zero_grad()
    mse.backward()
    opt.step()
