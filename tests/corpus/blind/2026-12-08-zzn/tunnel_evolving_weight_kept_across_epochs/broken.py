"""Tunnel-lining convergence forecasting with an evolving graph convolution (EvolveGCN-H).

Source: https://github.com/benedekrozemberczki/pytorch_geometric_temporal/issues/297
"RuntimeError: Trying to backward through the graph a second time (or directly
access saved tensors after they have already been freed)." (PyTorch Geometric
Temporal issue #297).

The reporter ran the library's `examples/recurrent/evolvegcnh_example.py`: a
`RecurrentGCN` made of an `EvolveGCNH` layer and a linear head, trained for 200
epochs; each epoch sums the MSE over all snapshots of the dynamic graph, then
`cost.backward(); optimizer.step(); optimizer.zero_grad()`.  `EvolveGCNH` keeps the
GCN weight it evolves as module state: the first call runs its GRU from
`initial_weight`, every later call from `self.weight`, the GRU output of the
previous snapshot.  So the weight left by the last snapshot of epoch 0 carries
epoch 0's graph into epoch 1, and epoch 1's backward fails in the freed graph.
The maintainers' fix (commit 987e43e, "fix bug by disconnecting backprop graph
between epochs", for the duplicate report #305) adds
`model.recurrent.weight = model.recurrent.weight.detach()` after each epoch's step.

Reduction: the same model and loop, with the layer written in plain torch (top-k
pooling by a learned score, `nn.GRU` evolving a C x C weight, a GCN with that
fixed weight over a dense normalised adjacency) on a synthetic tunnel monitoring
network: 20 convergence points along a tunnel lining, joined to their neighbours
along the drive and across the section, four lagged readings per point, next
reading as target.  The tunnel setting is mine; the example uses chickenpox
counts over Hungarian counties.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "points": 20,
    "lags": 4,
    "snapshots": 10,
    "epochs": 4,
    "lr": 0.01,
}


def normalized_adjacency(edge_index, n):
    a = torch.zeros(n, n)
    a[edge_index[0], edge_index[1]] = 1.0
    a = a + torch.eye(n)
    d = a.sum(1).pow(-0.5)
    return d[:, None] * a * d[None, :]


class TopKPooling(nn.Module):
    def __init__(self, channels, k):
        super().__init__()
        self.k = k
        self.p = nn.Parameter(torch.randn(channels) / math.sqrt(channels))

    def forward(self, x):
        score = x @ self.p / self.p.norm()
        idx = score.topk(self.k).indices
        return x[idx] * torch.tanh(score[idx])[:, None]


class EvolveGCNH(nn.Module):
    def __init__(self, num_of_nodes, in_channels):
        super().__init__()
        self.in_channels = in_channels
        self.weight = None
        self.initial_weight = nn.Parameter(torch.empty(1, in_channels, in_channels))
        nn.init.xavier_uniform_(self.initial_weight[0])
        k = math.ceil(in_channels / num_of_nodes * num_of_nodes)
        self.pooling_layer = TopKPooling(in_channels, k)
        self.recurrent_layer = nn.GRU(input_size=in_channels, hidden_size=in_channels, num_layers=1)

    def forward(self, x, a_hat):
        x_tilde = self.pooling_layer(x)[None, :, :]
        if self.weight is None:
            _, self.weight = self.recurrent_layer(x_tilde, self.initial_weight)
        else:
            _, self.weight = self.recurrent_layer(x_tilde, self.weight)
        return a_hat @ (x @ self.weight.squeeze(0))


class RecurrentGCN(nn.Module):
    def __init__(self, node_count, node_features):
        super().__init__()
        self.recurrent = EvolveGCNH(node_count, node_features)
        self.linear = nn.Linear(node_features, 1)

    def forward(self, x, a_hat):
        h = F.relu(self.recurrent(x, a_hat))
        return self.linear(h)


def make_tunnel_snapshots(hp):
    n = hp["points"]
    half = n // 2
    src, dst = [], []
    for i in range(half - 1):            # along the drive, both sidewalls
        for off in (0, half):
            src += [i + off, i + 1 + off]
            dst += [i + 1 + off, i + off]
    for i in range(half):                # across the section
        src += [i, i + half]
        dst += [i + half, i]
    edge_index = torch.tensor([src, dst])
    series = 0.05 * torch.randn(hp["snapshots"] + hp["lags"], n).cumsum(0)
    series += torch.linspace(0, 1, n)[None, :] * 0.2
    snapshots = []
    for t in range(hp["snapshots"]):
        x = series[t:t + hp["lags"]].T.contiguous()
        y = series[t + hp["lags"]][:, None]
        snapshots.append((x, y))
    return normalized_adjacency(edge_index, n), snapshots


def main():
    torch.manual_seed(11)
    hp = HPARAMS
    a_hat, train_dataset = make_tunnel_snapshots(hp)
    model = RecurrentGCN(node_count=hp["points"], node_features=hp["lags"])
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])

    model.train()
    for epoch in range(hp["epochs"]):
        cost = 0
        for time, (x, y) in enumerate(train_dataset):
            y_hat = model(x, a_hat)
            cost = cost + torch.mean((y_hat - y) ** 2)
        cost = cost / (time + 1)
        cost.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"epoch {epoch} MSE {cost.item():.5f}")


if __name__ == "__main__":
    main()
