"""Indoor localisation from WiFi CSI fingerprints: a CNN with learnable GeM pooling (intended: out-of-place squeeze).

Source: https://github.com/naver/deep-image-retrieval/issues/19 -- the R-MAC/GeM ResNet descriptors
of deep-image-retrieval called ``x.squeeze_()`` on the pooled features in ``forward``. The pooling is
generalised-mean pooling with a learnable exponent p (``x.pow(1/p)``), whose backward needs its own
output; squeezing that output in place bumps its version and backprop fails with "one of the variables
needed for gradient computation has been modified by an inplace operation". The reporter's fix is
``x = x.squeeze()``. The training setting is the writer's: CSI amplitude maps (antennas x subcarriers)
from a floor plan are embedded by a small CNN with the same GeM head; the embedding regresses the
(x, y) position and is shaped by a triplet loss so that fingerprints from nearby spots lie close.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
N_AP, N_SUB, N_SPOTS, PER_SPOT = 8, 16, 24, 6


def make_fingerprints():
    """Each reference spot has a CSI signature that fades with distance to the access points."""
    spots = torch.rand(N_SPOTS, 2) * 10.0
    aps = torch.rand(N_AP, 2) * 10.0
    freq = torch.linspace(0.5, 2.0, N_SUB)
    d = torch.cdist(spots, aps)                                   # (spots, ap)
    base = torch.cos(d[:, :, None] * freq[None, None, :]) / (1.0 + d[:, :, None])
    x = base.repeat_interleave(PER_SPOT, 0) + 0.05 * torch.randn(N_SPOTS * PER_SPOT, N_AP, N_SUB)
    y = spots.repeat_interleave(PER_SPOT, 0)
    return x.unsqueeze(1), y


class GeM(nn.Module):
    """Generalised-mean pooling with a learnable exponent."""

    def __init__(self, p=3.0, eps=1e-6):
        super().__init__()
        self.p = nn.Parameter(torch.ones(1) * p)
        self.eps = eps

    def forward(self, x):
        return F.adaptive_avg_pool2d(x.clamp(min=self.eps).pow(self.p), 1).pow(1.0 / self.p)


class FingerprintNet(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
        )
        self.pool = GeM()
        self.fc = nn.Linear(64, dim)
        self.loc_head = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, csi):
        x = self.features(csi)
        x = self.pool(x)
        x = x.squeeze()
        emb = F.normalize(self.fc(x), dim=-1)
        return emb, self.loc_head(emb)


def mine_triplets(pos):
    """Positive: nearest other fingerprint; negative: a random one at least 3 m away."""
    d = torch.cdist(pos, pos)
    d.fill_diagonal_(float("inf"))
    pos_idx = d.argmin(dim=1)
    far = (d > 3.0) & torch.isfinite(d)
    neg_idx = torch.multinomial(far.float() + 1e-6, 1).squeeze(1)
    return pos_idx, neg_idx


csi, coords = make_fingerprints()
model = FingerprintNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
triplet = nn.TripletMarginLoss(margin=0.3)

for epoch in range(4):
    perm = torch.randperm(csi.shape[0])
    for b in range(0, csi.shape[0], 32):
        idx = perm[b:b + 32]
        emb, loc = model(csi[idx])
        p_i, n_i = mine_triplets(coords[idx])
        loc_loss = F.smooth_l1_loss(loc, coords[idx])
        metric_loss = triplet(emb, emb[p_i], emb[n_i])
        loss = loc_loss + 0.5 * metric_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loc {loc_loss.item():.3f} triplet {metric_loss.item():.3f} p={model.pool.p.item():.2f}")
