"""Zero-shot style classification: a data set of (image, class vector) pairs is built once, its class vectors read
from a lookup table kept in a dict of tools (never given to the optimizer); a projection is trained to bring each
image close to its class's vector."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(3)

tools = {"lookup": nn.Embedding(10, 12)}


def encode_classes(class_ids):
    table = tools["lookup"]
    vectors = F.normalize(table(class_ids), dim=-1)
    return vectors


def build_pairs(n, batch):
    images = torch.randn(n, 20)
    labels = torch.randint(0, 5, (n,))
    vectors = encode_classes(labels)
    return [(images[i : i + batch], vectors[i : i + batch]) for i in range(0, n, batch)]


projector = nn.Sequential(nn.Linear(20, 16), nn.Tanh(), nn.Linear(16, 12))
optim = torch.optim.Adam(projector.parameters(), lr=1e-2)
pairs = build_pairs(40, 10)

for epoch in range(3):
    for images, targets in pairs:
        feats = F.normalize(projector(images), dim=-1)
        agreement = (feats * targets).sum(-1).mean()
        optim.zero_grad()
        (1 - agreement).backward()
        optim.step()
