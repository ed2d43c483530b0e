"""A siamese encoder with two objectives on one pair of embeddings, each backwarded on its own."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def pairs(gen, n=24, dim=10):
    a = torch.randn(n, dim, generator=gen)
    b = a + 0.3 * torch.randn(n, dim, generator=gen)
    same = (torch.rand(n, generator=gen) > 0.5).float()
    b = torch.where(same[:, None] > 0, b, torch.randn(n, dim, generator=gen))
    return a, b, same


def train(encoder, optimizer, steps=6):
    gen = torch.Generator().manual_seed(11)
    for step in range(steps):
        a, b, same = pairs(gen)
        za, zb = encoder(a), encoder(b)
        dist = F.pairwise_distance(za, zb)
        contrastive = (same * dist**2 + (1 - same) * F.relu(1.0 - dist) ** 2).mean()
        spread = (za.pow(2).mean() - 1.0).abs() + (zb.pow(2).mean() - 1.0).abs()

        optimizer.zero_grad()
        contrastive.backward()
        spread.backward()
        optimizer.step()
        print(step, contrastive.item(), spread.item())


if __name__ == "__main__":
    torch.manual_seed(5)
    encoder = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 8))
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.05)
    train(encoder, optimizer)
