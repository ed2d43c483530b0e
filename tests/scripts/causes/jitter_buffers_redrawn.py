"""A small regressor with a jitter layer: the layer redraws its two noise buffers in place at every forward, and
the loss compares the forwards of two batches before one backward."""

import torch
from torch import nn


class Jitter(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.scale = nn.Parameter(torch.ones(n))
        self.register_buffer("gain_noise", torch.zeros(n))
        self.register_buffer("shift_noise", torch.zeros(n))

    def forward(self, x):
        self.gain_noise.uniform_(0.9, 1.1)
        h = self.lin(x) * (self.scale * self.gain_noise)
        self.shift_noise.normal_(0.0, 0.01)
        return h + self.shift_noise * self.scale


torch.manual_seed(31)
jitter = Jitter(4)
head = nn.Linear(4, 1)
opt = torch.optim.SGD([*jitter.parameters(), *head.parameters()], lr=0.05)
for a, b in zip(torch.randn(3, 8, 4), torch.randn(3, 8, 4)):
    pa = head(jitter(a))
    pb = head(jitter(b))
    loss = (pa - pb).pow(2).mean() + pa.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
