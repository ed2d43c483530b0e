"""A small attention-free mixer whose blocks are checkpointed to save memory: each block adds a positional bias
the forward computes once from a learned table, read by the checkpointed function from its closure. The first
block's inner backward (the one a reentrant checkpoint runs) goes on into the bias's graph and frees it."""

import torch
from torch import nn
from torch.utils import checkpoint as ckpt


class Mixer(nn.Module):
    def __init__(self, tokens=8, width=16, depth=3):
        super().__init__()
        self.table = nn.Parameter(0.1 * torch.randn(tokens, width))
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width)) for _ in range(depth)]
        )
        self.out = nn.Linear(width, 1)

    def forward(self, h):
        bias = torch.tanh(self.table)
        for block in self.blocks:

            def run(x, block=block):
                return x + block(x + bias)

            h = ckpt.checkpoint(run, h, use_reentrant=True)
        return self.out(h.mean(1))


torch.manual_seed(6)
net = Mixer()
opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
for _ in range(2):
    x = torch.randn(4, 8, 16, requires_grad=True)
    y = torch.randn(4, 1)
    loss = nn.functional.mse_loss(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
