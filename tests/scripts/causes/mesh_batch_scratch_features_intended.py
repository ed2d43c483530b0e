"""Mesh classification where the convolution layers leave their edge features on each mesh batch.

Each batch object carries a ``store`` dict the layers write into and read back (a running sum of the
edge features over the layers). The data set keeps the batches, so the second epoch's forward of the
same batch reads the sums the first epoch stored, with their freed graph.
"""

import torch
from torch import nn

torch.manual_seed(11)


class MeshBatch:
    def __init__(self, verts, edges, label):
        self.verts, self.edges, self.label = verts, edges, label
        self.store = {}


class EdgeConv(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(2 * dim, dim)

    def forward(self, mesh, h):
        e = torch.relu(self.lin(torch.cat([h[mesh.edges[0]], h[mesh.edges[1]]], dim=1)))
        total = mesh.store.get("edge_sum", torch.zeros_like(e)) + e
        mesh.store["edge_sum"] = total
        return h + torch.zeros_like(h).index_add(0, mesh.edges[1], total)


class MeshNet(nn.Module):
    def __init__(self, dim=8, classes=3):
        super().__init__()
        self.inp = nn.Linear(3, dim)
        self.convs = nn.ModuleList([EdgeConv(dim), EdgeConv(dim)])
        self.out = nn.Linear(dim, classes)

    def forward(self, mesh):
        mesh.store = {}  # scratch of this forward: nothing carried from the last epoch
        h = self.inp(mesh.verts)
        for conv in self.convs:
            h = conv(mesh, h)
        return self.out(h.mean(dim=0, keepdim=True))


def make_mesh(label):
    n = 6 + label
    src = torch.arange(n)
    return MeshBatch(torch.randn(n, 3), torch.stack([src, (src + 1) % n]), torch.tensor([label]))


def train(net, meshes, opt, epochs):
    for epoch in range(epochs):
        total = 0.0
        for mesh in meshes:
            loss = nn.functional.cross_entropy(net(mesh), mesh.label)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"epoch {epoch}: {total / len(meshes):.4f}")


meshes = [make_mesh(k % 3) for k in range(5)]
net = MeshNet()
train(net, meshes, torch.optim.SGD(net.parameters(), lr=0.05), epochs=3)
