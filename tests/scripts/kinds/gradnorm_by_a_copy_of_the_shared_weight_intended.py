"""GradNorm-style balancing of two tasks on a shared trunk: each task's gradient norm is taken by the trunk's last
weight, asked of a copy of it, and a separate optimizer learns the task weights from those norms."""

import torch
import torch.nn as nn

torch.manual_seed(0)

trunk = nn.Linear(4, 6)
heads = nn.ModuleList([nn.Linear(6, 1), nn.Linear(6, 1)])
task_w = nn.Parameter(torch.ones(2))
opt = torch.optim.SGD([*trunk.parameters(), *heads.parameters()], lr=0.05)
opt_w = torch.optim.SGD([task_w], lr=0.05)
for it in range(3):
    x, ys = torch.randn(8, 4), [torch.randn(8, 1), torch.randn(8, 1)]
    h = torch.relu(trunk(x))
    losses = torch.stack([nn.functional.mse_loss(head(h), y) for head, y in zip(heads, ys)])
    weighted = task_w * losses
    norms = []
    for i in range(2):
        g = torch.autograd.grad(weighted[i], trunk.weight, retain_graph=True, create_graph=True)[0]
        norms.append(g.norm())
    norms = torch.stack(norms)
    balance = (norms - norms.mean().detach()).abs().sum()
    opt.zero_grad()
    opt_w.zero_grad()
    weighted.sum().backward(retain_graph=True)
    task_w.grad = torch.autograd.grad(balance, task_w)[0]
    opt.step()
    opt_w.step()
    print(it, round(balance.item(), 4))
