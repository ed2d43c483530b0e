"""Molecular property regression with a SchNet-style network, reduced from a public report.

Source: https://github.com/IceLab-X/MiniGP/issues/13 ("[stgp demo] RuntimeError: Trying to
backward through the graph a second time"). The report's model is a spatio-temporal Gaussian process
whose squared exponential kernels have learnable length scales, kept in log space. The training
setting here is the writer's, with the same kind of learnable width: a SchNet-like model (atom
embeddings, interatomic distances expanded on Gaussians with a learnable width, continuous-filter
convolutions, sum readout) regressing molecular energies with Adam. Synthetic 5-atom molecules,
CPU.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_ATOM_TYPES = 6
ATOMS_PER_MOLECULE = 5
CUTOFF = 4.0


class GaussianSmearing(nn.Module):
    def __init__(self, start=0.0, stop=CUTOFF, num_gaussians=16, width=0.5):
        super().__init__()
        self.register_buffer("offset", torch.linspace(start, stop, num_gaussians))
        self.log_width = nn.Parameter(torch.log(torch.tensor(width)))

    def forward(self, dist):
        width = torch.exp(self.log_width)
        coeff = -0.5 / width**2
        return torch.exp(coeff * (dist.unsqueeze(-1) - self.offset) ** 2)


class ShiftedSoftplus(nn.Module):
    def forward(self, x):
        return F.softplus(x) - 0.6931471805599453


class CFConv(nn.Module):
    """Continuous-filter convolution: neighbour features weighted by a filter of the distance expansion."""

    def __init__(self, hidden, num_gaussians):
        super().__init__()
        self.filter_net = nn.Sequential(nn.Linear(num_gaussians, hidden), ShiftedSoftplus(), nn.Linear(hidden, hidden))
        self.lin1 = nn.Linear(hidden, hidden, bias=False)
        self.lin2 = nn.Linear(hidden, hidden)

    def forward(self, h, edge_index, dist, rbf):
        src, dst = edge_index
        cutoff = 0.5 * (torch.cos(dist * torch.pi / CUTOFF) + 1.0)
        w = self.filter_net(rbf) * cutoff.unsqueeze(-1)
        messages = self.lin1(h)[src] * w
        agg = torch.zeros_like(h).index_add(0, dst, messages)
        return self.lin2(agg)


class Interaction(nn.Module):
    def __init__(self, hidden, num_gaussians):
        super().__init__()
        self.conv = CFConv(hidden, num_gaussians)
        self.act = ShiftedSoftplus()
        self.lin = nn.Linear(hidden, hidden)

    def forward(self, h, edge_index, dist, rbf):
        return self.lin(self.act(self.conv(h, edge_index, dist, rbf)))


class SchNetLite(nn.Module):
    def __init__(self, hidden=32, num_gaussians=16, num_interactions=2):
        super().__init__()
        self.embedding = nn.Embedding(NUM_ATOM_TYPES, hidden)
        self.distance_expansion = GaussianSmearing(num_gaussians=num_gaussians)
        self.interactions = nn.ModuleList([Interaction(hidden, num_gaussians) for _ in range(num_interactions)])
        self.readout = nn.Sequential(nn.Linear(hidden, hidden // 2), ShiftedSoftplus(), nn.Linear(hidden // 2, 1))

    def forward(self, z, pos, batch, edge_index):
        src, dst = edge_index
        dist = (pos[src] - pos[dst]).norm(dim=-1)
        rbf = self.distance_expansion(dist)
        h = self.embedding(z)
        for interaction in self.interactions:
            h = h + interaction(h, edge_index, dist, rbf)
        atom_energy = self.readout(h).squeeze(-1)
        num_molecules = int(batch.max()) + 1
        return torch.zeros(num_molecules).index_add(0, batch, atom_energy)


def radius_graph(pos, batch, cutoff=CUTOFF):
    same = batch[:, None] == batch[None, :]
    close = torch.cdist(pos, pos) < cutoff
    not_self = ~torch.eye(len(pos), dtype=torch.bool)
    src, dst = torch.nonzero(same & close & not_self, as_tuple=True)
    return torch.stack([src, dst])


def make_molecules(num_molecules):
    z = torch.randint(1, NUM_ATOM_TYPES, (num_molecules * ATOMS_PER_MOLECULE,))
    pos = 1.5 * torch.randn(num_molecules * ATOMS_PER_MOLECULE, 3)
    batch = torch.arange(num_molecules).repeat_interleave(ATOMS_PER_MOLECULE)
    energy = torch.zeros(num_molecules).index_add(0, batch, 0.3 * z.float()) + 0.1 * torch.randn(num_molecules)
    return z, pos, batch, energy


def train(model, loader, epochs=2, lr=1e-3):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(epochs):
        for z, pos, batch, energy in loader:
            edge_index = radius_graph(pos, batch)
            optimizer.zero_grad()
            pred = model(z, pos, batch, edge_index)
            loss = F.mse_loss(pred, energy)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: mse {loss.item():.4f}")


if __name__ == "__main__":
    loader = [make_molecules(8) for _ in range(3)]
    model = SchNetLite()
    train(model, loader)
