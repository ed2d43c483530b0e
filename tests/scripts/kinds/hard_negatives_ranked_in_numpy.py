"""Triplet training with the hardest negative of each anchor found by a numpy nearest-neighbour helper over a bank
of embeddings. The helper is handed the anchors straight from the network, so ``.numpy()`` refuses them. What the
helper computes is a ranking: the loss reads the bank's rows at those positions, so no gradient could flow through
numpy's numbers anyway, and a ``.detach()`` is the fix.
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def hardest_negatives(anchors, bank, labels, bank_labels):
    sims = anchors.numpy() @ bank.T
    sims[labels.numpy()[:, None] == bank_labels[None, :]] = -np.inf
    return np.argmax(sims, axis=1)


torch.manual_seed(2)
embed = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 8))
opt = torch.optim.Adam(embed.parameters(), lr=1e-2)
bank_x = torch.randn(40, 10)
bank_y = torch.randint(0, 4, (40,))

for it in range(4):
    x, y = torch.randn(12, 10), torch.randint(0, 4, (12,))
    pos = embed(x + 0.05 * torch.randn_like(x))
    anchors = F.normalize(embed(x), dim=1)
    with torch.no_grad():
        bank = F.normalize(embed(bank_x), dim=1)
    neg_idx = torch.as_tensor(hardest_negatives(anchors, bank.numpy(), y, bank_y.numpy()))
    negatives = bank[neg_idx]
    loss = F.triplet_margin_loss(anchors, F.normalize(pos, dim=1), negatives, margin=0.3)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"{embed[0].weight.sum().item():.6f}")
