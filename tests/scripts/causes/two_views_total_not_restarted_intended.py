"""Consistency training on two augmented views: each view's terms are summed into one total; the total is
started once, before the first view, and backwarded after each view (the step comes after both)."""

import torch
from torch import nn

torch.manual_seed(8)
enc = nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 3))
opt = torch.optim.SGD(enc.parameters(), lr=0.05)
data, labels = torch.randn(12, 6), torch.randint(0, 3, (12,))


def augment(x, scale):
    return x * scale + 0.05 * torch.randn_like(x)


for epoch in range(2):
    opt.zero_grad()
    objective = torch.zeros(())
    logits = enc(augment(data, 1.0))
    for w in (1.0, 0.5):
        objective += w * nn.functional.cross_entropy(logits, labels)
    objective.backward()
    logits = enc(augment(data, 0.8))
    objective = torch.zeros(())
    for w in (1.0, 0.5):
        objective += w * nn.functional.cross_entropy(logits, labels)
    objective.backward()
    opt.step()
    print(epoch, objective.item())
