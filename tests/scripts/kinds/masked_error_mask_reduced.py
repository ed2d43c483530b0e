"""A depth regressor trained on sparse ground truth: the per-pixel error is weighted by a validity mask."""

import torch
from torch import nn

torch.manual_seed(31)


def masked_error(pred, depth, valid):
    err = (pred - depth).abs()
    return err / valid.sum()


net = nn.Sequential(nn.Linear(7, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
for it in range(3):
    feats, depth = torch.randn(20, 7), torch.rand(20, 1) * 5
    valid = (torch.rand(20, 1) > 0.3).float()
    weighted = masked_error(net(feats), depth, valid) * valid
    objective = weighted * valid.mean()
    optimizer.zero_grad()
    objective.backward()
    optimizer.step()
