"""Training through torch.utils.checkpoint (use_reentrant=False)."""

import torch
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
block = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
head = torch.nn.Linear(4, 1)
opt = torch.optim.SGD([*block.parameters(), *head.parameters()], lr=0.1)
for step in range(3):
    x = torch.randn(5, 4, requires_grad=True)
    loss = head(checkpoint(block, x, use_reentrant=False)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 5), round(x.grad.norm().item(), 5))
