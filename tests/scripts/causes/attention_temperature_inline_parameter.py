"""Attention pooling over set elements with a learnable softmax temperature kept positive by softplus."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TemperedPooling(nn.Module):
    def __init__(self, dim, init_temperature=0.7):
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.tau = F.softplus(nn.Parameter(torch.tensor(init_temperature)))
        self.out = nn.Linear(dim, 2)

    def forward(self, elements):
        weights = torch.softmax(self.score(elements).squeeze(-1) / self.tau, dim=1)
        pooled = (weights.unsqueeze(-1) * elements).sum(dim=1)
        return self.out(pooled)


pooling = TemperedPooling(8)
adam = torch.optim.Adam(pooling.parameters(), lr=1e-2)
sets = torch.randn(5, 10, 7, 8)
labels = torch.randint(0, 2, (5, 10))
for epoch in range(2):
    for elements, y in zip(sets, labels):
        logits = pooling(elements)
        ce = F.cross_entropy(logits, y)
        adam.zero_grad()
        ce.backward()
        adam.step()
