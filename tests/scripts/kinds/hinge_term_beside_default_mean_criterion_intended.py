"""A classifier with a margin term between two views' confidences, written as a module that returns one hinge per
sample. The classification loss is ``nn.CrossEntropyLoss()`` (its default reduction is the mean); the attention
weights are normalised with ``w / w.sum()``, which is no loss. The hinge term is backwarded unreduced.
"""

import torch
from torch import nn


class MarginGap(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.margin = margin

    def forward(self, strong, weak):
        return torch.relu(weak - strong + self.margin)


torch.manual_seed(9)
model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
ce = nn.CrossEntropyLoss()
gap = MarginGap(0.2)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(3):
    x, y = torch.randn(12, 5), torch.randint(0, 3, (12,))
    w = torch.rand(12)
    w = w / w.sum()
    opt.zero_grad()
    logits = model(x)
    ce(logits, y).backward(retain_graph=True)
    conf = logits.softmax(-1).amax(-1)
    hinge = 0.5 * gap(conf, model(x + 0.3 * torch.randn_like(x)).softmax(-1).amax(-1)).mean()
    hinge.backward()
    opt.step()
