"""Template-based single-step retrosynthesis: a message-passing encoder over the product's
molecular graph (atoms as nodes, bonds as edges in both directions, GRU node updates) and a
classifier over reaction templates. Products are featurised once into batched graph objects
that are reused every epoch.

The graph object is a small DGL-style graph written for this script, with DGL's frame
semantics: layers store their features in ``g.ndata``, and ``send_and_recv`` writes the
reduced messages into an existing column out of place at the rows of the destination nodes
(``index_copy``, as DGL's ``Column.update``/``scatter_row`` does), so the new column is
computed from the old one.

Report: https://github.com/dmlc/dgl/issues/4285 -- a graph transformer written with DGL
(``g.ndata['Q_h'] = ...``, ``g.send_and_recv(..., fn.sum('V_h', 'wV'))``) was trained in a
loop over one ``DGLGraph`` kept outside the loop; the first step trained, the second raised
"Trying to backward through the graph a second time", and with ``retain_graph=True`` the
optimizer's in-place weight update was reported instead: the features the layers wrote into
the graph outlived the step, and the next step's update of those columns was computed from
tensors that still hung on the previous step's (freed) graph. The training setting
(retrosynthesis) is the writer's.
"""
import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_ATOM_TYPES, N_TEMPLATES, HIDDEN = 8, 10, 32


class MolGraph:
    """Batched molecular graph with DGL-like node data."""

    def __init__(self, atom_types, src, dst, mol_index, n_mols):
        self.atom_types, self.src, self.dst = atom_types, src, dst
        self.mol_index, self.n_mols = mol_index, n_mols
        self.num_nodes = atom_types.shape[0]
        self.ndata = {}

    def send_and_recv(self, message_field, out_field):
        msgs = self.ndata[message_field][self.src]
        agg = torch.zeros(self.num_nodes, msgs.shape[1]).index_add(0, self.dst, msgs)
        recv = torch.unique(self.dst)
        if out_field not in self.ndata:
            self.ndata[out_field] = torch.zeros_like(agg)
        self.ndata[out_field] = self.ndata[out_field].index_copy(0, recv, agg[recv])

    @contextlib.contextmanager
    def local_scope(self):
        saved = dict(self.ndata)
        try:
            yield
        finally:
            self.ndata = saved


class MPNNLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.msg = nn.Linear(dim, dim)
        self.upd = nn.GRUCell(dim, dim)

    def forward(self, g, h):
        g.ndata["m"] = F.relu(self.msg(h))
        g.send_and_recv("m", "agg")
        return self.upd(g.ndata["agg"], h)


class TemplateRanker(nn.Module):
    def __init__(self, dim=HIDDEN, n_layers=3):
        super().__init__()
        self.embed = nn.Embedding(N_ATOM_TYPES, dim)
        self.layers = nn.ModuleList(MPNNLayer(dim) for _ in range(n_layers))
        self.readout = nn.Sequential(nn.Linear(2 * dim, dim), nn.ReLU(), nn.Linear(dim, N_TEMPLATES))

    def forward(self, g):
        h = self.embed(g.atom_types)
        for layer in self.layers:
            h = layer(g, h)
        mol_sum = torch.zeros(g.n_mols, h.shape[1]).index_add(0, g.mol_index, h)
        mol_max = torch.full((g.n_mols, h.shape[1]), -1e4).scatter_reduce(
            0, g.mol_index[:, None].expand_as(h), h, reduce="amax")
        return self.readout(torch.cat([mol_sum, mol_max], dim=1))


def random_product(template):
    """A chain or ring molecule whose atom pattern and a branch depend on the template."""
    n = int(torch.randint(5, 10, ()))
    atoms = (torch.arange(n) * (template % 3 + 1) + template) % N_ATOM_TYPES
    bonds = [(i, i + 1) for i in range(n - 1)]
    if template % 2 == 0:
        bonds.append((0, n - 1))
    if template % 3 == 0:  # a branch atom on the middle of the chain
        atoms = torch.cat([atoms, torch.tensor([N_ATOM_TYPES - 1])])
        bonds.append((n // 2, n))
    return atoms, bonds


def featurise(mols):
    atom_types, src, dst, mol_index, offset = [], [], [], [], 0
    for i, (atoms, bonds) in enumerate(mols):
        atom_types.append(atoms)
        mol_index.append(torch.full((len(atoms),), i))
        for a, b in bonds:
            src += [a + offset, b + offset]
            dst += [b + offset, a + offset]
        offset += len(atoms)
    return MolGraph(torch.cat(atom_types), torch.tensor(src), torch.tensor(dst), torch.cat(mol_index), len(mols))


templates = torch.randint(0, N_TEMPLATES, (4, 16))
train_set = [(featurise([random_product(int(t)) for t in batch]), batch) for batch in templates[:2]]
val_graph, val_labels = featurise([random_product(int(t)) for t in templates[2]]), templates[2]

model = TemplateRanker()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(5):
    model.train()
    for graph, labels in train_set:
        logits = model(graph)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        top1 = (model(val_graph).argmax(1) == val_labels).float().mean()
    print(f"epoch {epoch}: loss {loss.item():.3f} val top-1 {top1.item():.2f}")
