"""Keypoint offsets predicted per image, clipped into the frame row by row in a helper that iterates over the
batch tensor (iterating unbinds it) and writes into each row, then returns the batch."""

import torch
from torch import nn

torch.manual_seed(4)
head = nn.Linear(8, 6)
opt = torch.optim.SGD(head.parameters(), lr=0.1)


def into_frame(points, limits):
    for k in range(len(points)):
        row = points[k]
        row.clamp_(-limits, limits)
    return points


feats, target = torch.randn(5, 8), torch.rand(5, 6)
for step in range(3):
    pts = into_frame(head(feats) * 2.0, 1.0)
    err = (pts - target).abs().mean()
    opt.zero_grad()
    err.backward()
    opt.step()
    print(step, err.item())
