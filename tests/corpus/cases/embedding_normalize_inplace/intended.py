"""Metric learning with a triplet loss; embeddings are L2-normalised in place."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(22)
embedder = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 8))
opt = torch.optim.SGD(embedder.parameters(), lr=0.05)
centers = torch.randn(5, 20) * 2
labels = torch.randint(0, 5, (60,))
points = centers[labels] + torch.randn(60, 20)


def embed(x):
    emb = embedder(x)
    emb = emb / emb.norm(dim=1, keepdim=True)
    return emb


def sample_triplets(n=16):
    anchor = torch.randint(0, 60, (n,))
    same = [torch.nonzero(labels == labels[a]).flatten() for a in anchor]
    other = [torch.nonzero(labels != labels[a]).flatten() for a in anchor]
    pos = torch.stack([s[torch.randint(0, len(s), (1,))][0] for s in same])
    neg = torch.stack([o[torch.randint(0, len(o), (1,))][0] for o in other])
    return points[anchor], points[pos], points[neg]


for epoch in range(3):
    for _ in range(3):
        a, p, n = sample_triplets()
        triplet = F.triplet_margin_loss(embed(a), embed(p), embed(n), margin=0.2)
        opt.zero_grad()
        triplet.backward()
        opt.step()
    print(epoch, triplet.item())
