"""Padded sequences scored by a linear head: before the softmax, a loop over the score rows (with their index, from
enumerate) writes a large negative value past each sequence's length."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
LONGEST = 7


def mask_padding(scores, lengths):
    positions = torch.arange(scores.shape[1]).unsqueeze(0)
    return scores.masked_fill(positions >= lengths.unsqueeze(1), -1e4)


head = nn.Linear(4, 1)
opt = torch.optim.SGD(head.parameters(), lr=0.1)
for _ in range(3):
    tokens = torch.randn(5, LONGEST, 4)
    lengths = torch.randint(2, LONGEST + 1, (5,))
    target = (lengths - 1).clamp(max=LONGEST - 1)
    scores = mask_padding(head(tokens).squeeze(-1), lengths)
    loss = F.cross_entropy(scores, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
