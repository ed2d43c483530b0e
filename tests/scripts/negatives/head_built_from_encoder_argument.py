"""A negative case of this stop's review: the script a rule was not written for (see tests/test_negatives.py)."""

import torch
import torch.nn as nn

torch.manual_seed(0)


class Head(nn.Module):
    def __init__(self, encoder, anchors):
        super().__init__()
        self.out = nn.Linear(8, 1)
        self.anchor_feats = encoder(anchors)  # computed once

    def forward(self, h):
        return self.out(h * self.anchor_feats.mean(0))


encoder = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
anchors = torch.randn(5, 4)
head = Head(encoder, anchors)
opt = torch.optim.SGD(list(head.parameters()) + list(encoder.parameters()), 0.1)
for _ in range(3):
    x = torch.randn(16, 4)
    loss = head(encoder(x)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
