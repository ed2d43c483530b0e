"""The checkpoint's input is modified in place before backward (use_reentrant=False): the note names it."""

import torch
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Sigmoid(), torch.nn.Linear(4, 4))
x = torch.randn(3, 4, requires_grad=True)
hidden = x * 2
hidden.add_(1)  # at version 1 when the checkpoint saves it
out = checkpoint(block, hidden, use_reentrant=False)
hidden.mul_(3)  # the checkpoint saved hidden to run block again during backward
out.sum().backward()
