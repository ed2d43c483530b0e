"""Crystal graph network trained on energies and forces, with a numpy periodic neighbour list (intended).

Corrected as the report's fix: the neighbour search gets detached copies (it only returns indices
and image shifts); distances are then computed in torch from the live positions, so forces still
flow through them.

Source: https://github.com/TorchSim/torch-sim/issues/469 -- the fairchem model wrapper's forward
converted positions, cell and pbc to numpy with ``.cpu().numpy()`` (to hand them to a neighbour-list
builder) without detaching them first. During a relaxation the positions require grad (forces are
-dE/dpos), so the conversion raised "Can't call numpy() on Tensor that requires grad"; the fix was
``.detach().cpu().numpy()``. The training setting is the writer's: a CGCNN-style crystal graph
network with periodic edges is fitted to energies and forces (force matching needs positions that
require grad), and the periodic neighbour search is a numpy helper fed the live positions.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
N_STRUCT, N_ATOMS, N_TYPES, CUTOFF = 12, 6, 3, 2.6


def make_dataset():
    """Synthetic cubic cells; energies/forces from a soft pair potential (the 'DFT' labels)."""
    data = []
    for _ in range(N_STRUCT):
        a = 3.0 + 0.4 * torch.rand(1).item()
        cell = torch.eye(3) * a
        frac = torch.rand(N_ATOMS, 3)
        types = torch.randint(0, N_TYPES, (N_ATOMS,))
        data.append((frac @ cell, cell, types))
    return data


def build_periodic_edges(pos, cell, cutoff):
    """Neighbour pairs (i, j, image shift) within cutoff under periodic boundary conditions."""
    pos_np = pos.detach().cpu().numpy()
    cell_np = cell.detach().cpu().numpy()
    shifts = np.array([[x, y, z] for x in (-1, 0, 1) for y in (-1, 0, 1) for z in (-1, 0, 1)], dtype=np.float32)
    src, dst, img = [], [], []
    for s in shifts:
        d = pos_np[None, :, :] + s @ cell_np - pos_np[:, None, :]
        dist = np.linalg.norm(d, axis=-1)
        ii, jj = np.nonzero((dist < cutoff) & (dist > 1e-6))
        src.extend(ii.tolist()); dst.extend(jj.tolist()); img.extend([s] * len(ii))
    return torch.tensor(src), torch.tensor(dst), torch.tensor(np.array(img), dtype=torch.float32)


def pair_energy(pos, cell):
    src, dst, img = build_periodic_edges(pos.detach(), cell, CUTOFF)
    r = (pos[dst] + img @ cell - pos[src]).norm(dim=-1)
    return 0.5 * (torch.exp(-2.0 * (r - 1.2)) - 2.0 * torch.exp(-(r - 1.2))).sum()


class GaussianBasis(nn.Module):
    def __init__(self, n=16):
        super().__init__()
        self.register_buffer("centers", torch.linspace(0.0, CUTOFF, n))

    def forward(self, r):
        return torch.exp(-4.0 * (r[:, None] - self.centers) ** 2)


class CGConv(nn.Module):
    def __init__(self, dim, edim):
        super().__init__()
        self.gate = nn.Linear(2 * dim + edim, dim)
        self.core = nn.Linear(2 * dim + edim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, h, src, dst, e):
        z = torch.cat([h[src], h[dst], e], dim=-1)
        msg = torch.sigmoid(self.gate(z)) * F.softplus(self.core(z))
        agg = torch.zeros_like(h).index_add(0, src, msg)
        return F.softplus(h + self.norm(agg))


class CrystalGraphNet(nn.Module):
    def __init__(self, dim=32, n_layers=3):
        super().__init__()
        self.embed = nn.Embedding(N_TYPES, dim)
        self.rbf = GaussianBasis()
        self.convs = nn.ModuleList([CGConv(dim, 16) for _ in range(n_layers)])
        self.readout = nn.Sequential(nn.Linear(dim, dim), nn.Softplus(), nn.Linear(dim, 1))

    def forward(self, pos, cell, types):
        src, dst, img = build_periodic_edges(pos, cell, CUTOFF)
        r = (pos[dst] + img @ cell - pos[src]).norm(dim=-1)
        e = self.rbf(r)
        h = self.embed(types)
        for conv in self.convs:
            h = conv(h, src, dst, e)
        return self.readout(h).sum()


data = make_dataset()
labels = []
for pos, cell, types in data:
    p = pos.clone().requires_grad_(True)
    E = pair_energy(p, cell)
    (g,) = torch.autograd.grad(E, p)
    labels.append((E.detach(), -g))

model = CrystalGraphNet()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
FORCE_WEIGHT = 10.0

for epoch in range(3):
    for k in torch.randperm(N_STRUCT).tolist():
        pos, cell, types = data[k]
        e_ref, f_ref = labels[k]
        pos = pos.clone().requires_grad_(True)
        energy = model(pos, cell, types)
        (dE_dpos,) = torch.autograd.grad(energy, pos, create_graph=True)
        forces = -dE_dpos
        loss = F.mse_loss(energy / N_ATOMS, e_ref / N_ATOMS) + FORCE_WEIGHT * F.mse_loss(forces, f_ref)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
