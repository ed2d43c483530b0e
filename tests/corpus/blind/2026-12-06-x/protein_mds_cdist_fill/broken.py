"""Protein structure: a small pair-representation trunk with distance and angle heads, coordinates from MDS.

Reduces https://github.com/lucidrains/alphafold2/pull/37 ("clean more masked_fills"). The authors were
building end-to-end sequence-to-coordinates training: the distogram head's central distances and weights
(center_distogram_torch) go through a differentiable multidimensional scaling (mds_torch, Guttman / SMACOF
updates) to 3-D coordinates, and a coordinate loss backpropagates through the MDS iterations. Inside each
iteration the zero distances of the current coordinates are replaced in place,
``dist_mat.masked_fill_(dist_mat == 0, 1e-7)``, on the output of ``torch.cdist``, which cdist saves for its
backward. The first iteration starts from random coordinates (no gradient); from the second on the
coordinates depend on the predicted distances, and ``loss.backward()`` fails with "modified by an inplace
operation" (the PR thread: "The error was in overwriting dist_mat. Added .clone()"). Synthetic C-alpha
chains stand in for PDB data; the trunk is the writer's small version of the pair stack.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_RES, N_TOK, DIM, N_BINS, BATCH = 16, 21, 32, 20, 4
BIN_CENTERS = torch.linspace(2.0, 21.0, N_BINS)


def make_chain(n):
    """A C-alpha trace: a random walk with 3.8 A steps and a bias towards turning (helix-like)."""
    steps = F.normalize(torch.randn(n, 3) + torch.tensor([1.0, 0.0, 0.0]), dim=-1) * 3.8
    return torch.cumsum(steps, dim=0)


def pseudo_torsions(ca):
    """Dihedral of four consecutive C-alpha atoms, as (sin, cos); zero-padded to the chain length."""
    b0, b1, b2 = ca[1:-2] - ca[:-3], ca[2:-1] - ca[1:-2], ca[3:] - ca[2:-1]
    n1, n2 = torch.cross(b0, b1, dim=-1), torch.cross(b1, b2, dim=-1)
    m1 = torch.cross(n1, F.normalize(b1, dim=-1), dim=-1)
    ang = torch.atan2((m1 * n2).sum(-1), (n1 * n2).sum(-1))
    out = torch.zeros(ca.shape[0], 2)
    out[1:-2] = torch.stack([ang.sin(), ang.cos()], dim=-1)
    return out


class PairBlock(nn.Module):
    """Outgoing triangle-style multiplicative update plus a transition, both residual."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.left, self.right, self.gate = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.transition = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, z):
        h = self.norm(z)
        tri = torch.einsum("bikc,bjkc->bijc", self.left(h), self.right(h)) / z.shape[1]
        z = z + torch.sigmoid(self.gate(h)) * self.out(tri)
        return z + self.transition(z)


class StructureNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(N_TOK, DIM)
        self.left, self.right = nn.Linear(DIM, DIM), nn.Linear(DIM, DIM)
        self.relpos = nn.Embedding(2 * 8 + 1, DIM)
        self.blocks = nn.ModuleList([PairBlock(DIM) for _ in range(2)])
        self.single_update = nn.Linear(DIM, DIM)
        self.dist_head = nn.Linear(DIM, N_BINS)
        self.angle_head = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, 2))

    def forward(self, seq):
        s = self.embed(seq)
        idx = torch.arange(seq.shape[1])
        rel = (idx[None, :] - idx[:, None]).clamp(-8, 8) + 8
        z = self.left(s)[:, :, None] + self.right(s)[:, None, :] + self.relpos(rel)
        for block in self.blocks:
            z = block(z)
        s = s + self.single_update(z.mean(dim=2))
        logits = self.dist_head(0.5 * (z + z.transpose(1, 2)))
        return logits, F.normalize(self.angle_head(s), dim=-1)


def center_distogram(logits):
    """Expected distance per pair, and a weight that is low where the distogram is spread out."""
    probs = logits.softmax(dim=-1)
    central = (probs * BIN_CENTERS).sum(dim=-1)
    spread = (probs * (BIN_CENTERS - central.unsqueeze(-1)) ** 2).sum(dim=-1).sqrt()
    eye = torch.eye(central.shape[-1])
    return central * (1 - eye), (1 - eye) / (1 + spread)


def mds_coords(pre_dist, weights, iters=5):
    """Distances to 3-D coordinates by Guttman transforms, as mds_torch does."""
    batch, n, _ = pre_dist.shape
    diag = torch.arange(n)
    coords = 2 * torch.rand(batch, n, 3) - 1
    for _ in range(iters):
        dist_mat = torch.cdist(coords, coords, p=2)
        stress = (weights * (dist_mat - pre_dist) ** 2).sum(dim=(-1, -2)) * 0.5
        dist_mat.masked_fill_(dist_mat == 0, 1e-7)
        ratio = weights * (pre_dist / dist_mat)
        B = -ratio
        old_B = B[:, diag, diag].clone()
        B[:, diag, diag] = old_B + ratio.sum(dim=-1)
        coords = (1.0 / n) * torch.matmul(B, coords)
    return coords, stress


chains = torch.stack([make_chain(N_RES) for _ in range(16)])
sequences = torch.randint(0, N_TOK, (16, N_RES))
true_dist = torch.cdist(chains, chains)
dist_bins = torch.bucketize(true_dist, BIN_CENTERS[:-1] + 0.5)
torsions = torch.stack([pseudo_torsions(c) for c in chains])

model = StructureNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(2):
    for start in range(0, 16, BATCH):
        seq, d_true = sequences[start:start + BATCH], true_dist[start:start + BATCH]
        logits, angles = model(seq)
        dist_loss = F.cross_entropy(logits.reshape(-1, N_BINS), dist_bins[start:start + BATCH].reshape(-1))
        angle_loss = (1 - (angles * torsions[start:start + BATCH]).sum(-1))[:, 1:-2].mean()
        central, weights = center_distogram(logits)
        coords, stress = mds_coords(central, weights)
        coord_loss = (torch.cdist(coords, coords) - d_true).pow(2).mean().sqrt()  # distance RMSD
        loss = dist_loss + 0.5 * angle_loss + 0.1 * coord_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: distogram {dist_loss.item():.3f} angles {angle_loss.item():.3f} "
          f"dRMSD {coord_loss.item():.2f} stress {stress.mean().item():.1f}")
