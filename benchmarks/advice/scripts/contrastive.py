"""Contrastive: SimCLR-style NT-Xent on two noisy views, plus a MoCo-style queue of momentum-encoder negatives."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

DIM, EMB, QUEUE = 12, 8, 64


def augment(x):
    scale = 1 + 0.1 * torch.randn(x.shape[0], 1)
    return scale * x + 0.1 * torch.randn_like(x)


class Projector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(DIM, 32), nn.ReLU(), nn.Linear(32, 32))
        self.head = nn.Linear(32, EMB)

    def forward(self, x):
        h = F.relu(self.backbone(x))
        z = self.head(h)
        z = z / z.norm(dim=1, keepdim=True)
        return z


def info_nce(q, k, queue, temperature=0.2):
    pos = (q * k).sum(dim=1, keepdim=True)
    neg = q @ queue.t()
    logits = torch.cat([pos, neg], dim=1) / temperature
    targets = torch.zeros(q.shape[0], dtype=torch.long)
    return F.cross_entropy(logits, targets)


def nt_xent(z1, z2, temperature=0.5):
    z = torch.cat([z1, z2], dim=0)
    sim = z @ z.t() / temperature
    sim = sim.masked_fill(torch.eye(len(z), dtype=torch.bool), float("-inf"))
    n = z1.shape[0]
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(sim, targets)


def main():
    data = torch.randn(128, DIM)
    encoder = Projector()
    key_encoder = copy.deepcopy(encoder)
    for p in key_encoder.parameters():
        p.requires_grad = False
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.05, momentum=0.9)
    queue = F.normalize(torch.randn(QUEUE, EMB), dim=1)
    for epoch in range(2):
        for x in data.split(32):
            q1 = encoder(augment(x))
            q2 = encoder(augment(x))
            with torch.no_grad():
                k = key_encoder(augment(x))
            loss = nt_xent(q1, q2) + info_nce(q1, k, queue)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                for pk, pq in zip(key_encoder.parameters(), encoder.parameters()):
                    pk.mul_(0.99).add_(pq, alpha=0.01)
            queue = torch.cat([q2.detach(), queue])[:QUEUE]
        print(f"epoch {epoch}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
