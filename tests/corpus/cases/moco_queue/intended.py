"""MoCo-style contrastive learning: a queue of negative keys from a momentum encoder."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, dim_in=12, dim=8):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim_in, 24), nn.ReLU(), nn.Linear(24, dim))

    def forward(self, x):
        return F.normalize(self.body(x), dim=1)


class MoCo:
    def __init__(self, K=32, m=0.99, T=0.1):
        self.encoder_q = Encoder()
        self.encoder_k = Encoder()
        self.encoder_k.load_state_dict(self.encoder_q.state_dict())
        self.K, self.m, self.T = K, m, T
        self.queue = F.normalize(torch.randn(K, 8), dim=1)

    @torch.no_grad()
    def momentum_update(self):
        for pq, pk in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            pk.mul_(self.m).add_(pq, alpha=1 - self.m)

    def loss(self, x_q, x_k):
        q = self.encoder_q(x_q)
        with torch.no_grad():
            k = self.encoder_k(x_k)
        l_pos = (q * k).sum(dim=1, keepdim=True)
        l_neg = q @ self.queue.t()
        logits = torch.cat([l_pos, l_neg], dim=1) / self.T
        labels = torch.zeros(logits.size(0), dtype=torch.long)
        self.queue = torch.cat([k, self.queue])[: self.K]
        return F.cross_entropy(logits, labels)


def augment(x):
    return x + 0.2 * torch.randn_like(x)


torch.manual_seed(7)
moco = MoCo()
optimizer = torch.optim.SGD(moco.encoder_q.parameters(), lr=0.03, momentum=0.9, weight_decay=1e-4)
images = torch.randn(80, 12)
for epoch in range(2):
    for i in range(0, 80, 16):
        x = images[i : i + 16]
        contrastive_loss = moco.loss(augment(x), augment(x))
        optimizer.zero_grad()
        contrastive_loss.backward()
        optimizer.step()
        moco.momentum_update()
    print(epoch, contrastive_loss.item())
