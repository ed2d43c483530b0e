"""A mixture-density head splits one ReLU output into its two parameter slices and scales each in place: both
writes go to the tensor ReLU saved, on two lines."""

import math

import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, dim=6, k=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, 2 * k), nn.ReLU())
        self.k = k

    def forward(self, x):
        out = self.body(x)
        logits, spread = out[:, : self.k], out[:, self.k :]
        logits = logits / math.sqrt(self.k)
        spread = spread * 0.5
        return logits, spread


torch.manual_seed(29)
head = Head()
opt = torch.optim.Adam(head.parameters(), lr=1e-2)
for _ in range(3):
    x = torch.randn(7, 6)
    logits, spread = head(x)
    nll = torch.logsumexp(logits, 1).mean() + spread.pow(2).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
