"""Metric learning with a hinge on hard pairs only: each batch's loss sums the pairs that violate the margin, and
the model steps on that sum."""

import torch
from torch import nn

torch.manual_seed(3)
embed = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 4))
opt = torch.optim.SGD(embed.parameters(), lr=0.05)
margin = 1.0
batches = [(torch.randn(5, 6), torch.randn(5, 6)) for _ in range(3)]
batches.insert(1, (torch.zeros(5, 6), torch.full((5, 6), 50.0)))  # pairs far apart: none within the margin
for epoch in range(2):
    for anchors, others in batches:
        za, zo = embed(anchors), embed(others)
        hinge = torch.zeros(1)
        for a, o in zip(za, zo):
            d = (a - o).norm()
            if d < margin:
                hinge += margin - d
        if not hinge.requires_grad:  # no pair violated the margin: nothing to learn from this batch
            continue
        opt.zero_grad()
        hinge.backward()
        opt.step()
