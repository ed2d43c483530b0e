"""ARMA graph convolutions for node classification (DGL's examples/pytorch/arma).

Source: https://github.com/dmlc/dgl/issues/4202
"[Example][Bug] Running error on the example case: example/pytorch/arma".
The reporter ran DGL's ARMA example (``python citation.py``) on Cora with its default two stacks.
Reduced: the two DGL calls the model uses (``update_all`` with copy_u/sum, ``in_degrees``) are
written out on a small random graph with random features and labels; the model code is DGL's.
"""

import argparse
import math
from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class Graph:
    """The part of a DGLGraph the ARMA example uses: node data, in-degrees, copy_u + sum message passing."""

    def __init__(self, src, dst, num_nodes):
        self.src, self.dst, self.num_nodes = src, dst, num_nodes
        self.ndata = {}

    def in_degrees(self):
        return torch.bincount(self.dst, minlength=self.num_nodes)

    @contextmanager
    def local_scope(self):
        saved = dict(self.ndata)
        try:
            yield
        finally:
            self.ndata = saved

    def update_all_copy_sum(self, field):
        h = self.ndata[field]
        self.ndata[field] = torch.zeros_like(h).index_add(0, self.dst, h[self.src])


def glorot(tensor):
    if tensor is not None:
        stdv = math.sqrt(6.0 / (tensor.size(-2) + tensor.size(-1)))
        tensor.data.uniform_(-stdv, stdv)


def zeros(tensor):
    if tensor is not None:
        tensor.data.fill_(0)


class ARMAConv(nn.Module):
    def __init__(self, in_dim, out_dim, num_stacks, num_layers, activation=None, dropout=0.0, bias=True):
        super().__init__()
        self.in_dim = in_dim
        self.out_dim = out_dim
        self.K = num_stacks
        self.T = num_layers
        self.activation = activation
        self.dropout = nn.Dropout(p=dropout)
        # init weight
        self.w_0 = nn.ModuleDict({str(k): nn.Linear(in_dim, out_dim, bias=False) for k in range(self.K)})
        # deeper weight
        self.w = nn.ModuleDict({str(k): nn.Linear(out_dim, out_dim, bias=False) for k in range(self.K)})
        # v
        self.v = nn.ModuleDict({str(k): nn.Linear(in_dim, out_dim, bias=False) for k in range(self.K)})
        # bias
        if bias:
            self.bias = nn.Parameter(torch.Tensor(self.K, self.T, 1, self.out_dim))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        for k in range(self.K):
            glorot(self.w_0[str(k)].weight)
            glorot(self.w[str(k)].weight)
            glorot(self.v[str(k)].weight)
        zeros(self.bias)

    def forward(self, g, feats):
        with g.local_scope():
            init_feats = feats
            # assume that the graphs are undirected and graph.in_degrees() is the same as graph.out_degrees()
            degs = g.in_degrees().float().clamp(min=1)
            norm = torch.pow(degs, -0.5).to(feats.device).unsqueeze(1)
            output = None

            for k in range(self.K):
                feats = init_feats
                for t in range(self.T):
                    feats = feats * norm
                    g.ndata["h"] = feats
                    g.update_all_copy_sum("h")
                    feats = g.ndata.pop("h")
                    feats = feats * norm

                    feats = self.w_0[str(k)](feats) if t == 0 else self.w[str(k)](feats)

                    feats += self.dropout(self.v[str(k)](init_feats))
                    feats += self.v[str(k)](self.dropout(init_feats))

                    if self.bias is not None:
                        feats += self.bias[k][t]

                    if self.activation is not None:
                        feats = self.activation(feats)

                if output is None:
                    output = feats
                else:
                    output += feats

            return output / self.K


class ARMA4NC(nn.Module):
    def __init__(self, in_dim, hid_dim, out_dim, num_stacks, num_layers, activation=None, dropout=0.0):
        super().__init__()
        self.conv1 = ARMAConv(
            in_dim=in_dim,
            out_dim=hid_dim,
            num_stacks=num_stacks,
            num_layers=num_layers,
            activation=activation,
            dropout=dropout,
        )
        self.conv2 = ARMAConv(
            in_dim=hid_dim,
            out_dim=out_dim,
            num_stacks=num_stacks,
            num_layers=num_layers,
            activation=activation,
            dropout=dropout,
        )
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, g, feats):
        feats = F.relu(self.conv1(g, feats))
        feats = self.dropout(feats)
        feats = self.conv2(g, feats)
        return feats


def main(args):
    torch.manual_seed(args.seed)
    n_nodes, n_features, n_classes = 40, 12, 3
    src = torch.randint(0, n_nodes, (120,))
    dst = torch.randint(0, n_nodes, (120,))
    graph = Graph(torch.cat([src, dst]), torch.cat([dst, src]), n_nodes)  # undirected
    feats = torch.randn(n_nodes, n_features)
    labels = torch.randint(0, n_classes, (n_nodes,))
    train_idx = torch.arange(0, 20)

    model = ARMA4NC(
        in_dim=n_features,
        hid_dim=args.hid_dim,
        out_dim=n_classes,
        num_stacks=args.num_stacks,
        num_layers=args.num_layers,
        activation=nn.ReLU(),
        dropout=args.dropout,
    )
    loss_fn = nn.CrossEntropyLoss()
    opt = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.lamb)

    for no_epoch in range(args.epochs):
        model.train()
        logits = model(graph, feats)
        train_loss = loss_fn(logits[train_idx], labels[train_idx])
        opt.zero_grad()
        train_loss.backward()
        opt.step()
        print(f"epoch {no_epoch} train loss {train_loss.item():.4f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="ARMA GCN")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--lamb", type=float, default=5e-4)
    parser.add_argument("--hid-dim", type=int, default=16)
    parser.add_argument("--num-stacks", type=int, default=2)
    parser.add_argument("--num-layers", type=int, default=1)
    parser.add_argument("--dropout", type=float, default=0.75)
    parser.add_argument("--seed", type=int, default=0)
    main(parser.parse_args([]))
