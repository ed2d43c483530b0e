"""Deep Sets classifier with second-order pooling: each element is embedded by phi, the set is
pooled into its mean and the matrix square root of its feature covariance (both invariant to the
order of the elements), and rho classifies which family of point clouds the set was drawn from.

Reduces https://github.com/cornellius-gp/gpytorch/pull/1203, "[Bug] In place _symeig clamping
fails to have correct backwards": gpytorch's symmetric eigendecomposition helper clamped the
eigenvalues it got back in place (``evals.clamp_min_(...)``). The eigendecomposition saves its
outputs for its backward, so the in-place clamp breaks the backward; in current PyTorch the
backward raises "one of the variables needed for gradient computation has been modified by an
inplace operation". The fix replaces clamp_min_ by the out-of-place clamp_min.

Here the author writes the same helper for the covariance pooling's matrix square root (eigh,
clamp the eigenvalues, take their root). The training setting is the writer's.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
SET_SIZE, FEAT = 24, 6


def sample_sets(n):
    """Three families of 2-D point clouds: round blobs, elongated blobs, rings."""
    labels = torch.randint(3, (n,))
    sets = torch.randn(n, SET_SIZE, 2)
    angle = torch.rand(n) * math.pi
    rot = torch.stack([torch.cos(angle), -torch.sin(angle), torch.sin(angle), torch.cos(angle)], -1).view(n, 2, 2)
    stretch = torch.tensor([3.0, 0.4])
    sets[labels == 1] = (sets[labels == 1] * stretch) @ rot[labels == 1]
    ring = sets[labels == 2]
    sets[labels == 2] = 2.0 * ring / ring.norm(dim=-1, keepdim=True) + 0.1 * torch.randn_like(ring)
    sets = sets + torch.randn(n, 1, 2)  # random offset per set
    return sets, labels


def sym_sqrt(mat, eps=1e-4):
    """Matrix square root of a batch of symmetric PSD matrices."""
    evals, evecs = torch.linalg.eigh(mat)
    evals.clamp_min_(eps)
    return evecs @ torch.diag_embed(evals.sqrt()) @ evecs.transpose(-1, -2)


class CovPool(nn.Module):
    def forward(self, h):  # h: (B, N, D)
        mean = h.mean(1)
        centred = h - mean.unsqueeze(1)
        cov = centred.transpose(1, 2) @ centred / (h.shape[1] - 1)
        root = sym_sqrt(cov)
        iu = torch.triu_indices(h.shape[2], h.shape[2])
        return torch.cat([mean, root[:, iu[0], iu[1]]], dim=-1)


class DeepSetsCov(nn.Module):
    def __init__(self):
        super().__init__()
        self.phi = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, FEAT))
        self.pool = CovPool()
        self.rho = nn.Sequential(nn.Linear(FEAT + FEAT * (FEAT + 1) // 2, 32), nn.ReLU(), nn.Linear(32, 3))

    def forward(self, sets):
        return self.rho(self.pool(self.phi(sets)))


train_x, train_y = sample_sets(384)
val_x, val_y = sample_sets(128)
model = DeepSetsCov()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)

for epoch in range(4):
    perm = torch.randperm(len(train_x))
    for i in range(0, len(train_x), 64):
        idx = perm[i:i + 64]
        logits = model(train_x[idx])
        loss = F.cross_entropy(logits, train_y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scheduler.step()
    with torch.no_grad():
        # a permutation of every set must not change the prediction
        shuffled = val_x[:, torch.randperm(SET_SIZE)]
        acc = (model(shuffled).argmax(-1) == val_y).float().mean()
    print(f"epoch {epoch}: loss {loss.item():.3f} val acc {acc.item():.2f}")
