"""A regressor with an auxiliary confidence head: the per-item error is kept unreduced (the confidence head
learns to predict it), the head's own hinge is a sum divided by the batch size, and the total adds both."""

import torch
from torch import nn

torch.manual_seed(11)
trunk = nn.Sequential(nn.Linear(5, 16), nn.ReLU())
value_head, conf_head = nn.Linear(16, 1), nn.Linear(16, 1)
opt = torch.optim.SGD([*trunk.parameters(), *value_head.parameters(), *conf_head.parameters()], lr=0.05)
xs, ys = torch.randn(24, 5), torch.randn(24)


def hinge(pred, err):
    gap = pred.squeeze(1) - err.detach()
    return torch.sum(torch.relu(0.1 - gap)) / pred.size(0)


for epoch in range(3):
    h = trunk(xs)
    per_item = (value_head(h).squeeze(1) - ys) ** 2
    total = per_item.mean() + 0.5 * hinge(conf_head(h), per_item)
    opt.zero_grad()
    total.backward()
    opt.step()
    print(epoch, per_item.mean().item())
