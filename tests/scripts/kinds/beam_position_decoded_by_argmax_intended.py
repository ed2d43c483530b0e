"""A sensor strip localises a beam: a network scores 24 bins per reading, a decoder takes the expected bin under a softmax as the beam's
position, and the loss compares it with the measured position."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(11)
BINS = 24


def decode(bins: torch.Tensor) -> torch.Tensor:
    idx = (bins.softmax(dim=1) * torch.arange(BINS, dtype=bins.dtype)).sum(dim=1)
    return idx / (BINS - 1)


scorer = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, BINS))
opt = torch.optim.Adam(scorer.parameters(), lr=1e-2)

for _ in range(4):
    readings = torch.randn(20, 6)
    measured = torch.rand(20)
    where = decode(scorer(readings))
    miss = F.smooth_l1_loss(where, measured)
    opt.zero_grad()
    miss.backward()
    opt.step()
