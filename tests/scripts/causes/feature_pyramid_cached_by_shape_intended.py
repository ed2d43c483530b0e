"""A crack detector for bridge-deck scans: the backbone memoises the list of its stage outputs keyed by the input's
shape, a shortcut meant for repeated crops, so every later batch of the same size gets the first batch's stages."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([nn.Linear(8, 8), nn.Linear(8, 8)])
        self.memo = {}

    def forward(self, x):
        key = tuple(x.shape)
        if key not in self.memo:
            feats, h = [], x
            for stage in self.stages:
                h = torch.tanh(stage(h))
                feats.append(h)
            self.memo[key] = feats
        return self.memo[key]


backbone, head = Backbone(), nn.Linear(16, 1)
opt = torch.optim.Adam([*backbone.parameters(), *head.parameters()], lr=1e-2)
for it in range(3):
    x, y = torch.randn(4, 8), torch.rand(4, 1)
    loss = F.binary_cross_entropy_with_logits(head(torch.cat(backbone(x), dim=-1)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    backbone.memo.clear()
    print(it, round(loss.item(), 4))
