"""Metric learning with a hard-negative margin term: a numpy helper scores each anchor against a bank of embeddings
of the other classes, and the loss takes the k largest similarities as the hard negatives' scores. The helper is
handed the anchors straight from the network, so .numpy() refuses them. The similarities are values the loss is
meant to push down (the anchors should move away from their hardest negatives)."""

import torch
import torch.nn.functional as F
from torch import nn


def negative_sims(anchors, bank, labels, bank_labels):
    sims = anchors.numpy() @ bank.T
    sims[labels.numpy()[:, None] == bank_labels[None, :]] = -1.0
    return sims


torch.manual_seed(2)
embed = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 8))
opt = torch.optim.Adam(embed.parameters(), lr=1e-2)
bank_x, bank_y = torch.randn(40, 10), torch.randint(0, 4, (40,))
for _it in range(4):
    x, y = torch.randn(12, 10), torch.randint(0, 4, (12,))
    anchors = F.normalize(embed(x), dim=1)
    positives = F.normalize(embed(x + 0.05 * torch.randn_like(x)), dim=1)
    with torch.no_grad():
        bank = F.normalize(embed(bank_x), dim=1)
    sims = torch.as_tensor(negative_sims(anchors, bank.numpy(), y, bank_y.numpy()))
    hard = torch.topk(sims, 3, dim=1).values
    pos = (anchors * positives).sum(1, keepdim=True)
    loss = F.relu(0.3 + hard - pos).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"{embed[0].weight.sum().item():.6f}")
