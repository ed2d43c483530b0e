"""Multi-task: both optimizers hold the shared encoder; the first step runs before the second loss's backward."""

import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
cls_head, reg_head = nn.Linear(8, 3), nn.Linear(8, 1)
opt_cls = torch.optim.AdamW([*encoder.parameters(), *cls_head.parameters()], lr=1e-3)
opt_reg = torch.optim.AdamW([*encoder.parameters(), *reg_head.parameters()], lr=1e-3)
x, labels, targets = torch.randn(10, 6), torch.randint(0, 3, (10,)), torch.randn(10, 1)

for step in range(2):
    feats = encoder(x)
    cls_loss = nn.functional.cross_entropy(cls_head(feats), labels)
    reg_loss = (reg_head(feats) - targets).pow(2).mean()
    opt_cls.zero_grad()
    cls_loss.backward(retain_graph=True)
    opt_cls.step()
    opt_reg.zero_grad()
    reg_loss.backward()
    opt_reg.step()
