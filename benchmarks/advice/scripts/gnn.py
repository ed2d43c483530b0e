"""GNN: a two-layer graph convolution written by hand (normalized adjacency, message passing) for node classification."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_NODES, N_FEATS, N_CLASSES = 60, 8, 3

# a stochastic block model: nodes of one class link to each other more often
labels = torch.arange(N_NODES) % N_CLASSES
same = (labels[:, None] == labels[None, :]).float()
adj = (torch.rand(N_NODES, N_NODES) < 0.05 + 0.25 * same).float()
adj = ((adj + adj.t()) > 0).float()
adj = adj + torch.eye(N_NODES)
deg_inv_sqrt = adj.sum(1).pow(-0.5)
adj_norm = deg_inv_sqrt[:, None] * adj * deg_inv_sqrt[None, :]
features = F.one_hot(labels, N_CLASSES).float() @ torch.randn(N_CLASSES, N_FEATS) + torch.randn(N_NODES, N_FEATS)
train_mask = torch.rand(N_NODES) < 0.5


class GraphConv(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out)

    def forward(self, h, a):
        messages = self.lin(h)
        return a @ messages


class GCN(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.conv1 = GraphConv(N_FEATS, hidden)
        self.conv2 = GraphConv(hidden, N_CLASSES)

    def forward(self, x, a):
        h = self.conv1(x, a)
        h = F.elu(h)
        h = F.dropout(h, p=0.0, training=self.training)
        return self.conv2(h, a)


model = GCN()
optimizer = torch.optim.Adam(model.parameters(), lr=0.02, weight_decay=5e-4)

for epoch in range(10):
    model.train()
    out = model(features, adj_norm)
    loss = F.cross_entropy(out[train_mask], labels[train_mask])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if epoch % 5 == 4:
        acc = (out.argmax(1)[~train_mask] == labels[~train_mask]).float().mean()
        print(f"epoch {epoch}: loss {loss.item():.3f} held-out accuracy {acc.item():.2f}")
