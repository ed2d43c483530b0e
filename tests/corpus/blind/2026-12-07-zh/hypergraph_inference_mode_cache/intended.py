"""Hypergraph neural network (HGNN) for node classification, with the normalised propagation operator
built lazily and cached in the convolution, and an evaluation pass run under ``torch.inference_mode``.

Reduces https://github.com/snowflakedb/ArcticTraining/pull/265 ("[eval] replace `torch.inference_mode`
with `torch.no_grad`"). In that trainer the ``evaluate`` method was decorated with
``@torch.inference_mode()``; when training and evaluation were mixed, tensors that the model had
created during evaluation and kept were reused by the next training step, which failed with
"Inference tensors cannot be saved for backward". The fix replaced ``torch.inference_mode`` with
``torch.no_grad`` for evaluation. Here the kept tensor is the HGNN operator
``G = Dv^-1/2 H W De^-1 H^T Dv^-1/2``, built on the convolution's first call and cached because the
hypergraph is fixed; the first call happens in the sanity evaluation before training. The training
setting (citation-style node classification on a synthetic hypergraph) is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_NODES, N_EDGES, N_FEAT, N_CLASSES, HIDDEN = 120, 40, 16, 3, 32
EPOCHS = 6


def make_hypergraph():
    # nodes of the same class tend to share hyperedges; each hyperedge has 3-8 members
    labels = torch.randint(0, N_CLASSES, (N_NODES,))
    feats = torch.randn(N_NODES, N_FEAT) + 0.8 * F.one_hot(labels, N_FEAT).float()
    H = torch.zeros(N_NODES, N_EDGES)
    for e in range(N_EDGES):
        cls = e % N_CLASSES
        members = torch.nonzero(labels == cls).squeeze(1)
        k = int(torch.randint(3, 9, (1,)))
        chosen = members[torch.randperm(len(members))[:k]]
        H[chosen, e] = 1.0
        H[torch.randint(0, N_NODES, (1,)), e] = 1.0  # one noisy member
    H[H.sum(1) == 0, torch.randint(0, N_EDGES, (1,))] = 1.0  # no isolated node
    edge_weight = torch.ones(N_EDGES)
    return feats, labels, H, edge_weight


class HGNNConv(nn.Module):
    def __init__(self, in_dim, out_dim, H, edge_weight):
        super().__init__()
        self.theta = nn.Linear(in_dim, out_dim)
        self.H = H
        self.edge_weight = edge_weight
        self._G = None  # the hypergraph is fixed, so the operator is built once

    def propagation(self):
        if self._G is None:
            dv = (self.H * self.edge_weight).sum(1)
            de = self.H.sum(0)
            dv_inv_sqrt = dv.pow(-0.5)
            self._G = (dv_inv_sqrt[:, None] * self.H * (self.edge_weight / de)) @ (self.H.t() * dv_inv_sqrt[None, :])
        return self._G

    def forward(self, x):
        # node -> hyperedge -> node message passing through the incidence matrix
        return self.propagation() @ self.theta(x)


class HGNN(nn.Module):
    def __init__(self, H, edge_weight):
        super().__init__()
        self.conv1 = HGNNConv(N_FEAT, HIDDEN, H, edge_weight)
        self.conv2 = HGNNConv(HIDDEN, N_CLASSES, H, edge_weight)
        self.dropout = nn.Dropout(0.3)

    def forward(self, x):
        x = self.dropout(F.relu(self.conv1(x)))
        return self.conv2(x)


@torch.no_grad()
def evaluate(model, feats, labels, mask):
    model.eval()
    pred = model(feats).argmax(1)
    model.train()
    return (pred[mask] == labels[mask]).float().mean().item()


feats, labels, H, edge_weight = make_hypergraph()
perm = torch.randperm(N_NODES)
train_mask = torch.zeros(N_NODES, dtype=torch.bool)
train_mask[perm[:60]] = True
val_mask = ~train_mask

model = HGNN(H, edge_weight)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)

print(f"val acc before training {evaluate(model, feats, labels, val_mask):.3f}")
for epoch in range(EPOCHS):
    logits = model(feats)
    loss = F.cross_entropy(logits[train_mask], labels[train_mask])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f} val acc {evaluate(model, feats, labels, val_mask):.3f}")
