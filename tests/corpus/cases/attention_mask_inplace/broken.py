"""A tiny self-attention pooling model; padded positions are zeroed in the attention weights in place."""

import math

import torch
import torch.nn as nn


class AttentionPool(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.query = nn.Parameter(torch.randn(dim) / math.sqrt(dim))
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.classifier = nn.Linear(dim, 2)

    def forward(self, seq, pad_mask):
        scores = self.key(seq) @ self.query / math.sqrt(seq.size(-1))  # (B, L)
        weights = torch.softmax(scores, dim=-1)
        weights.masked_fill_(pad_mask, 0.0)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        pooled = (weights.unsqueeze(-1) * self.value(seq)).sum(dim=1)
        return self.classifier(pooled)


def main():
    torch.manual_seed(21)
    model = AttentionPool()
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    lengths = torch.randint(3, 9, (32,))
    seqs = torch.randn(32, 8, 16)
    pad = torch.arange(8)[None, :] >= lengths[:, None]
    labels = (seqs[:, 0, 0] > 0).long()
    for epoch in range(4):
        logits = model(seqs, pad)
        ce = nn.functional.cross_entropy(logits, labels)
        optimizer.zero_grad()
        ce.backward()
        optimizer.step()
        print(epoch, ce.item())


main()
