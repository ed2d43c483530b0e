"""A gated pooling layer: softmax scores over the items, rescaled by a learned gate; the rescaling is written
as one augmented assignment spread over several lines."""

import torch
import torch.nn.functional as F
from torch import nn


class GatedPool(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.gate = nn.Linear(dim, 1)

    def forward(self, items):
        weights = self.score(items).softmax(dim=1)
        weights = weights * torch.sigmoid(self.gate(items.mean(dim=1, keepdim=True)))
        return (weights * items).sum(dim=1)


torch.manual_seed(9)
pool = GatedPool(5)
head = nn.Linear(5, 2)
opt = torch.optim.Adam([*pool.parameters(), *head.parameters()], lr=1e-2)
for step in range(3):
    items, labels = torch.randn(4, 7, 5), torch.randint(0, 2, (4,))
    loss = F.cross_entropy(head(pool(items)), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
