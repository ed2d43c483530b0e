"""Node classification with a graph convolution written after PyG's "Creating Message Passing Networks" tutorial.

Source: https://github.com/pyg-team/pytorch_geometric/issues/8953
"Inplace operation in message passing example".
The reporter followed the tutorial's GCNConv (add self-loops, linear map, symmetric normalisation,
``propagate``, then ``out += self.bias``) and found that the final in-place bias makes torch fail
in some cases. Here the layer aggregates with ``aggr="max"``, as the same page's EdgeConv does.
Reduced: PyG's MessagePassing/propagate machinery is written out for this one layer; a small
random graph with random features and labels.
Corrected as the issue proposes (and the tutorial now reads): ``out = out + self.bias``.
"""

import torch
import torch.nn.functional as F
from torch.nn import Linear, Parameter


def add_self_loops(edge_index, num_nodes):
    loop = torch.arange(num_nodes).unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loop], dim=1), None


def degree(index, num_nodes, dtype):
    return torch.zeros(num_nodes, dtype=dtype).scatter_add_(0, index, torch.ones(index.numel(), dtype=dtype))


class MessagePassing(torch.nn.Module):
    def __init__(self, aggr="add"):
        super().__init__()
        self.aggr = aggr

    def propagate(self, edge_index, x, **kwargs):
        row, col = edge_index
        msg = self.message(x_j=x[row], **kwargs)
        index = col.unsqueeze(-1).expand_as(msg)
        out = msg.new_zeros(x.size(0), msg.size(-1))
        if self.aggr == "add":
            out = out.scatter_add_(0, index, msg)
        else:
            out = out.scatter_reduce_(0, index, msg, reduce="amax", include_self=False)
        return self.update(out)

    def message(self, x_j):
        return x_j

    def update(self, aggr_out):
        return aggr_out


class GCNConv(MessagePassing):
    def __init__(self, in_channels, out_channels):
        super().__init__(aggr="max")  # "Max" aggregation, as in the tutorial's EdgeConv.
        self.lin = Linear(in_channels, out_channels, bias=False)
        self.bias = Parameter(torch.empty(out_channels))
        self.reset_parameters()

    def reset_parameters(self):
        self.lin.reset_parameters()
        self.bias.data.zero_()

    def forward(self, x, edge_index):
        # Step 1: Add self-loops to the adjacency matrix.
        edge_index, _ = add_self_loops(edge_index, num_nodes=x.size(0))

        # Step 2: Linearly transform node feature matrix.
        x = self.lin(x)

        # Step 3: Compute normalization.
        row, col = edge_index
        deg = degree(col, x.size(0), dtype=x.dtype)
        deg_inv_sqrt = deg.pow(-0.5)
        deg_inv_sqrt[deg_inv_sqrt == float("inf")] = 0
        norm = deg_inv_sqrt[row] * deg_inv_sqrt[col]

        # Step 4-5: Start propagating messages.
        out = self.propagate(edge_index, x=x, norm=norm)

        # Step 6: Apply a final bias vector.
        out = out + self.bias

        return out

    def message(self, x_j, norm):
        # Normalize node features.
        return norm.view(-1, 1) * x_j


class GCN(torch.nn.Module):
    def __init__(self, num_features, hidden, num_classes):
        super().__init__()
        self.conv1 = GCNConv(num_features, hidden)
        self.conv2 = GCNConv(hidden, num_classes)

    def forward(self, x, edge_index):
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edge_index)


def train(model, optimizer, x, edge_index, y, train_mask):
    model.train()
    optimizer.zero_grad()
    out = model(x, edge_index)
    loss = F.cross_entropy(out[train_mask], y[train_mask])
    loss.backward()
    optimizer.step()
    return float(loss)


if __name__ == "__main__":
    torch.manual_seed(12345)
    num_nodes = 30
    edge_index = torch.randint(0, num_nodes, (2, 90))
    edge_index = torch.cat([edge_index, edge_index.flip(0)], dim=1)
    x = torch.randn(num_nodes, 8)
    y = torch.randint(0, 3, (num_nodes,))
    train_mask = torch.rand(num_nodes) < 0.6
    model = GCN(8, 16, 3)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for epoch in range(1, 6):
        loss = train(model, optimizer, x, edge_index, y, train_mask)
        print(f"Epoch: {epoch:03d}, Loss: {loss:.4f}")
