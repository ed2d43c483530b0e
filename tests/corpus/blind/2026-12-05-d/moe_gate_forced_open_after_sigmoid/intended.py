"""Reduced from https://github.com/pytorch/pytorch/issues/9391

The author computed b = a.sigmoid() and then overwrote one entry in place (b[1] = 2) before
b.sum().backward(); this raised "one of the variables needed for gradient computation has been
modified by an inplace operation", while the hand-written 1/(exp(-a)+1) did not. The answer:
torch.sigmoid saves its output for the backward, so writing into that output invalidates it;
build a new tensor instead of assigning into the saved one.

Here the same pattern in training code: a small gated mixture of experts computes per-expert
sigmoid gates and forces the first (shared) expert fully open with gates[:, 0] = 1.0.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class GatedMoE(nn.Module):
    def __init__(self, d_in=10, d_out=3, n_experts=4):
        super().__init__()
        self.experts = nn.ModuleList([nn.Linear(d_in, d_out) for _ in range(n_experts)])
        self.gate = nn.Linear(d_in, n_experts)

    def forward(self, x):
        gates = torch.sigmoid(self.gate(x))
        gates = torch.cat([torch.ones_like(gates[:, :1]), gates[:, 1:]], dim=1)
        outs = torch.stack([e(x) for e in self.experts], dim=1)
        return (gates.unsqueeze(-1) * outs).sum(1)


model = GatedMoE()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

X = torch.randn(64, 10)
y = torch.randint(0, 3, (64,))

for epoch in range(3):
    for i in range(0, 64, 16):
        logits = model(X[i:i + 16])
        loss = F.cross_entropy(logits, y[i:i + 16])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
