"""The clean embedding is the target of every pass: detached where it is made."""

import torch
from torch import nn
from torch.nn import functional as F


def jitter(x, k):
    return x + 0.05 * (k + 1) * torch.randn_like(x)


def train(embedder, head, batches, passes=3):
    opt = torch.optim.SGD([*embedder.parameters(), *head.parameters()], lr=0.05)
    for x, y in batches:
        clean = embedder(x).detach()
        for k in range(passes):
            z = embedder(jitter(x, k))
            align = F.mse_loss(z, clean.detach() if k == 0 else clean)
            total = F.cross_entropy(head(z), y) + 0.1 * align
            opt.zero_grad()
            total.backward()
            opt.step()


torch.manual_seed(11)
embedder = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 8))
head = nn.Linear(8, 3)
data = [(torch.randn(10, 6), torch.randint(0, 3, (10,))) for _ in range(3)]
train(embedder, head, data)
