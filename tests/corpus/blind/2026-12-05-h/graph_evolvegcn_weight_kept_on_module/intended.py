"""EvolveGCN-H on a dynamic graph: regress a signal per node, snapshot after snapshot.

Reduced from https://github.com/benedekrozemberczki/pytorch_geometric_temporal/issues/305
(the library's `evolvegcnh_example.py`): a recurrent GCN whose convolution weight is
evolved by a GRU from one snapshot to the next (TopK-pooled node summary as the GRU's
input), a linear head on top, Adam, one backward per epoch over the MSE of all the
training snapshots. Chickenpox-like synthetic data: 20 nodes, 4 lagged features.
"""

import torch
import torch.nn.functional as F

torch.manual_seed(0)

NUM_NODES, NUM_FEATURES, NUM_SNAPSHOTS = 20, 4, 6


def make_snapshots():
    snapshots = []
    for _ in range(NUM_SNAPSHOTS):
        adj = (torch.rand(NUM_NODES, NUM_NODES) < 0.2).float()
        adj = ((adj + adj.t()) > 0).float()
        x = torch.randn(NUM_NODES, NUM_FEATURES)
        y = x[:, :1].mean(1) + 0.1 * torch.randn(NUM_NODES)
        snapshots.append((x, adj, y))
    return snapshots


def gcn_norm(adj):
    adj = adj + torch.eye(adj.shape[0])
    deg_inv_sqrt = adj.sum(1).pow(-0.5)
    return deg_inv_sqrt[:, None] * adj * deg_inv_sqrt[None, :]


class TopKPooling(torch.nn.Module):
    def __init__(self, in_channels, k):
        super().__init__()
        self.k = k
        self.weight = torch.nn.Parameter(torch.randn(in_channels) / in_channels**0.5)

    def forward(self, x):
        score = x @ self.weight / self.weight.norm()
        top = score.topk(self.k).indices
        return x[top] * torch.tanh(score[top])[:, None]


class EvolveGCNH(torch.nn.Module):
    def __init__(self, num_of_nodes, in_channels):
        super().__init__()
        self.weight = None
        self.initial_weight = torch.nn.Parameter(torch.empty(1, in_channels, in_channels))
        torch.nn.init.xavier_uniform_(self.initial_weight)
        self.pooling_layer = TopKPooling(in_channels, k=in_channels)
        self.recurrent_layer = torch.nn.GRU(input_size=in_channels, hidden_size=in_channels)

    def forward(self, X, adj_norm):
        X_tilde = self.pooling_layer(X)[None, :, :]
        if self.weight is None:
            _, self.weight = self.recurrent_layer(X_tilde, self.initial_weight)
        else:
            _, self.weight = self.recurrent_layer(X_tilde, self.weight)
        return adj_norm @ (X @ self.weight.squeeze(dim=0))


class RecurrentGCN(torch.nn.Module):
    def __init__(self, node_count, node_features):
        super().__init__()
        self.recurrent = EvolveGCNH(node_count, node_features)
        self.linear = torch.nn.Linear(node_features, 1)

    def forward(self, x, adj_norm):
        h = self.recurrent(x, adj_norm)
        h = F.relu(h)
        return self.linear(h)


train_dataset = make_snapshots()
model = RecurrentGCN(node_features=NUM_FEATURES, node_count=NUM_NODES)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

model.train()
for epoch in range(20):
    cost = 0
    for time, (x, adj, y) in enumerate(train_dataset):
        y_hat = model(x, gcn_norm(adj))
        cost = cost + torch.mean((y_hat.squeeze(-1) - y) ** 2)
    cost = cost / (time + 1)
    cost.backward()
    optimizer.step()
    optimizer.zero_grad()

    # cut off the graph of the evolved weight between epochs
    model.recurrent.weight = model.recurrent.weight.detach()
    print(f"epoch {epoch}: MSE {cost.item():.4f}")
