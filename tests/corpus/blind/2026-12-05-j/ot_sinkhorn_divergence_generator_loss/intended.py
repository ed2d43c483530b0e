"""Training a sample generator with an entropic OT loss (POT's empirical Sinkhorn divergence, torch backend).

Source: https://github.com/PythonOT/POT/issues/393

The author uses ``ot.bregman.empirical_sinkhorn_divergence(source, target, reg)`` as the loss
between a generator's samples and samples of the target distribution (a ring of Gaussians in
2-D), with Adam. The small ``ot`` namespace below stands in for the POT 0.8.2 functions the
script calls (``dist``, ``sinkhorn2`` and ``bregman.empirical_sinkhorn_divergence``), reduced
to what they compute in that version.
"""

import math
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)


# --- stand-in for the parts of POT 0.8.2 used here -------------------------------------------
def _dist(x1, x2):
    return (x1[:, None, :] - x2[None, :, :]).pow(2).sum(-1)


def _sinkhorn2(a, b, M, reg, numItermax=100):
    K = torch.exp(-M / reg)
    u = torch.ones_like(a) / a.shape[0]
    v = torch.ones_like(b) / b.shape[0]
    for _ in range(numItermax):
        u = a / (K @ v)
        v = b / (K.t() @ u)
    G = u[:, None] * K * v[None, :]
    return (G * M).sum()


def _np_sinkhorn2(a, b, M, reg, numItermax=100):
    K = np.exp(-M / reg)
    u = np.ones_like(a) / a.shape[0]
    v = np.ones_like(b) / b.shape[0]
    for _ in range(numItermax):
        u = a / (K @ v)
        v = b / (K.T @ u)
    return float(np.sum(u[:, None] * K * v[None, :] * M))


def _empirical_sinkhorn_divergence(X_s, X_t, reg, numIterMax=100):
    # 0.8.2: the divergence is computed on the arrays' numpy copies and converted back
    xs, xt = X_s.detach().cpu().numpy(), X_t.detach().cpu().numpy()
    a, b = np.full(len(xs), 1.0 / len(xs)), np.full(len(xt), 1.0 / len(xt))

    def np_dist(x1, x2):
        return ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1)

    ab = _np_sinkhorn2(a, b, np_dist(xs, xt), reg, numIterMax)
    aa = _np_sinkhorn2(a, a, np_dist(xs, xs), reg, numIterMax)
    bb = _np_sinkhorn2(b, b, np_dist(xt, xt), reg, numIterMax)
    return torch.tensor(max(0.0, ab - 0.5 * (aa + bb)), dtype=X_s.dtype)


ot = SimpleNamespace(
    dist=_dist,
    sinkhorn2=_sinkhorn2,
    bregman=SimpleNamespace(empirical_sinkhorn_divergence=_empirical_sinkhorn_divergence),
)
# ----------------------------------------------------------------------------------------------


def sample_ring(n, n_modes=8, radius=2.0, std=0.05):
    k = torch.randint(0, n_modes, (n,))
    angle = 2 * math.pi * k.float() / n_modes
    centers = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
    return centers + std * torch.randn(n, 2)


class Generator(nn.Module):
    def __init__(self, z_dim=4, hidden=64):
        super().__init__()
        self.z_dim = z_dim
        self.net = nn.Sequential(nn.Linear(z_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def forward(self, n):
        return self.net(torch.randn(n, self.z_dim))


generator = Generator()
optimizer = torch.optim.Adam(generator.parameters(), lr=1e-3)
REG, BATCH = 1.0, 64

for it in range(50):
    target = sample_ring(BATCH)
    source = generator(BATCH)
    optimizer.zero_grad()
    a = torch.full((BATCH,), 1.0 / BATCH)
    b = torch.full((BATCH,), 1.0 / BATCH)
    loss = (
        ot.sinkhorn2(a, b, ot.dist(source, target), REG)
        - 0.5 * ot.sinkhorn2(a, a, ot.dist(source, source), REG)
        - 0.5 * ot.sinkhorn2(b, b, ot.dist(target, target), REG)
    )
    loss.backward()
    optimizer.step()
    if it % 10 == 0:
        print(f"iter {it}: sinkhorn divergence {loss.item():.4f}")
