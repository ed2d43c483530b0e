"""EGNN interatomic potential trained on energies and forces (forces as -dE/dx).

Source: https://github.com/learningmatter-mit/Atomistic-Adversarial-Attacks/issues/1
The author computed forces inside the model as the negative gradient of the
predicted energy with ``torch.autograd.grad`` and then called ``backward`` on a
loss built from them: "Trying to backward through the graph a second time".
The maintainer's answer: ``autograd.grad`` frees the energy's graph unless told
to keep it; NeuralForceField computes its forces with the graph kept. The
report's model is another network potential; here it is an E(n)-equivariant
graph network (EGNN) fitted to energies and forces of small synthetic
soft-core Lennard-Jones clusters.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_ATOMS = 6
N_TYPES = 2
HIDDEN = 32


def lennard_jones(pos, types):
    eps = torch.tensor([1.0, 1.5])[types]
    eps_ij = torch.sqrt(eps[:, :, None] * eps[:, None, :])
    d2 = ((pos[:, :, None] - pos[:, None, :]) ** 2).sum(-1) + torch.eye(N_ATOMS) + 0.5  # soft core
    inv6 = d2.reciprocal() ** 3
    pair = 4 * eps_ij * (inv6 ** 2 - inv6) * (1 - torch.eye(N_ATOMS))
    return 0.5 * pair.sum(dim=(1, 2))


def make_dataset(n):
    base = torch.randn(n, N_ATOMS, 3)
    pos = 1.4 * base / base.norm(dim=-1, keepdim=True) * (1 + 0.3 * torch.rand(n, N_ATOMS, 1))
    types = torch.randint(0, N_TYPES, (n, N_ATOMS))
    pos.requires_grad_(True)
    energy = lennard_jones(pos, types)
    forces = -torch.autograd.grad(energy.sum(), pos)[0]
    return pos.detach(), types, energy.detach(), forces.detach()


class EGNNLayer(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.edge_mlp = nn.Sequential(nn.Linear(2 * hidden + 1, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
        self.coord_mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 1))
        self.node_mlp = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.SiLU(), nn.Linear(hidden, hidden))

    def forward(self, h, x, mask):
        rel = x[:, :, None] - x[:, None, :]  # B, N, N, 3
        d2 = (rel ** 2).sum(-1, keepdim=True)
        hi = h[:, :, None].expand(-1, -1, N_ATOMS, -1)
        hj = h[:, None, :].expand(-1, N_ATOMS, -1, -1)
        m = self.edge_mlp(torch.cat([hi, hj, d2], dim=-1)) * mask
        x = x + (rel * self.coord_mlp(m) * mask).sum(2) / (N_ATOMS - 1)
        h = h + self.node_mlp(torch.cat([h, m.sum(2)], dim=-1))
        return h, x


class EGNNPotential(nn.Module):
    def __init__(self, hidden=HIDDEN, layers=3):
        super().__init__()
        self.embed = nn.Embedding(N_TYPES, hidden)
        self.layers = nn.ModuleList(EGNNLayer(hidden) for _ in range(layers))
        self.readout = nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 1))
        self.register_buffer("mask", (1 - torch.eye(N_ATOMS))[None, :, :, None])

    def forward(self, pos, types):
        pos = pos.requires_grad_(True)
        h, x = self.embed(types), pos
        for layer in self.layers:
            h, x = layer(h, x, self.mask)
        energy = self.readout(h).squeeze(-1).sum(-1)
        forces = -torch.autograd.grad(energy.sum(), pos, create_graph=True)[0]
        return energy, forces


model = EGNNPotential()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
pos_all, types_all, e_all, f_all = make_dataset(64)
e_mean, e_std = e_all.mean(), e_all.std()
force_weight = 10.0

for step in range(8):
    idx = torch.randint(0, 64, (16,))
    pos, types = pos_all[idx].clone(), types_all[idx]
    energy, forces = model(pos, types)
    loss_energy = F.mse_loss(energy, (e_all[idx] - e_mean) / e_std)
    loss_forces = F.mse_loss(forces, f_all[idx] / e_std)
    loss = loss_energy + force_weight * loss_forces
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 2 == 0:
        print(f"step {step} E {loss_energy.item():.4f} F {loss_forces.item():.4f}")
