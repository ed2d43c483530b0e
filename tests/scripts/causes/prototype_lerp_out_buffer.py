"""A classifier scored against an exponential moving average of class prototypes, kept in a buffer. The loop updates
the prototypes between the forward and the backward with ``torch.lerp(..., out=self.protos)``: a write through
``out=``, in place, into the buffer the forward's matrix product saved. No in-place method appears in the code.
"""

import torch
import torch.nn.functional as F
from torch import nn


class ProtoNet(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, 12), nn.ReLU(), nn.Linear(12, 6))
        self.register_buffer("protos", torch.randn(classes, 6))

    def forward(self, x):
        h = self.body(x)
        return h @ self.protos.t(), h

    @torch.no_grad()
    def refresh(self, h, y):
        means = torch.stack([h[y == c].mean(0) if (y == c).any() else self.protos[c] for c in range(len(self.protos))])
        torch.lerp(self.protos, means, 0.1, out=self.protos)


torch.manual_seed(6)
net = ProtoNet(7, 3)
opt = torch.optim.SGD(net.body.parameters(), lr=0.1)
for step in range(4):
    x, y = torch.randn(16, 7), torch.randint(0, 3, (16,))
    logits, feats = net(x)
    ce = F.cross_entropy(logits, y)
    net.refresh(feats, y)
    opt.zero_grad()
    ce.backward()
    opt.step()
print(f"{net.protos.sum().item():.6f}")
