"""Reduced from https://github.com/yujianke100/GFDN/issues/4

GFDN (group-based fraud detection on e-commerce platforms) trains a GNN over the user-item graph
together with a pre-trained autoencoder on the user features: after every graph convolution the
autoencoder's hidden layer of the same depth is added onto the user nodes' rows,
x[edge_u_id] = x[edge_u_id] + h[i], and a DEC-style clustering loss (KL to a sharpened target) is
trained next to the label loss and the reconstruction loss. With a recent PyTorch the first
backward fails with "one of the variables needed for gradient computation has been modified by an
inplace operation" (output 0 of ReluBackward0). The maintainer's answer: replace the ReLUs of the
GNN layers with a custom_relu, torch.where(x > 0, x, torch.tensor(0.0)).

Here the same model with dense normalized adjacency in place of torch_geometric's GCNConv.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Linear
from torch.nn.parameter import Parameter

torch.manual_seed(0)

N_USERS, N_ITEMS, N_INPUT, N_ENC, N_Z, N_CLUSTERS = 24, 16, 12, 16, 8, 4


class AE(nn.Module):
    def __init__(self, n_enc, hidden, n_input, n_z):
        super().__init__()
        self.enc_in = Linear(n_input, n_enc)
        self.hidden_enc = nn.ModuleList([Linear(n_enc, n_enc) for _ in range(hidden)])
        self.z_layer = Linear(n_enc, n_z)
        self.dec_in = Linear(n_z, n_enc)
        self.x_bar_layer = Linear(n_enc, n_input)

    def forward(self, x):
        enc_result = [F.relu(self.enc_in(x))]
        for layer in self.hidden_enc:
            enc_result.append(F.relu(layer(enc_result[-1])))
        z = self.z_layer(enc_result[-1])
        x_bar = self.x_bar_layer(F.relu(self.dec_in(z)))
        return x_bar, enc_result, z


def custom_relu(x):
    return torch.where(x > 0, x, torch.tensor(0.0))


class GCN_NET(nn.Module):
    def __init__(self, in_feature, out_feature):
        super().__init__()
        self.lin = Linear(in_feature, out_feature)

    def forward(self, x, adj, active=True):
        x = adj @ self.lin(x)
        if active:
            x = custom_relu(x)
        return x


class GNN(nn.Module):
    def __init__(self, n_input, n_clusters, n_enc, hidden, n_z):
        super().__init__()
        self.ae = AE(n_enc, hidden, n_input, n_z)
        self.gnn_in = GCN_NET(n_input, n_enc)
        self.hidden_gnn = nn.ModuleList([GCN_NET(n_enc, n_enc) for _ in range(hidden)])
        self.gnn_nz = GCN_NET(n_enc, n_z)
        self.gnn_cluster = GCN_NET(n_z, n_clusters)
        self.cluster_layer = Parameter(torch.Tensor(n_clusters, n_z))
        torch.nn.init.xavier_normal_(self.cluster_layer.data)
        self.v = 1

    def forward(self, x, edge_u_x, edge_u_id, adj):
        x_bar, h, z = self.ae(edge_u_x)
        x = self.gnn_in(x, adj)
        for i, layer in enumerate(self.hidden_gnn):
            x[edge_u_id] = x[edge_u_id] + h[i]
            x = layer(x, adj)
        x[edge_u_id] = x[edge_u_id] + h[-1]
        x = self.gnn_nz(x, adj)
        x[edge_u_id] = x[edge_u_id] + z
        x = self.gnn_cluster(x, adj, active=False)
        x = torch.sigmoid(x[edge_u_id])

        q = 1.0 / (1.0 + torch.sum(torch.pow(z.unsqueeze(1) - self.cluster_layer, 2), 2) / self.v)
        q = q.pow((self.v + 1.0) / 2.0)
        q = (q.t() / torch.sum(q, 1)).t()
        return x, x_bar, q


def target_distribution(q):
    weight = q**2 / q.sum(0)
    return (weight.t() / weight.sum(1)).t()


def normalized_adjacency(n_nodes, edges):
    adj = torch.eye(n_nodes)
    adj[edges[0], edges[1]] = 1.0
    adj[edges[1], edges[0]] = 1.0
    d = adj.sum(1).rsqrt()
    return d[:, None] * adj * d[None, :]


n_nodes = N_USERS + N_ITEMS
features = torch.randn(n_nodes, N_INPUT)
edges = torch.stack([torch.randint(0, N_USERS, (60,)), torch.randint(N_USERS, n_nodes, (60,))])
adj = normalized_adjacency(n_nodes, edges)
user_labels = torch.randint(0, 2, (N_USERS,))

model = GNN(N_INPUT, N_CLUSTERS, N_ENC, hidden=1, n_z=N_Z)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


def train(epoch):
    model.train()
    optimizer.zero_grad()
    edge_u_id = torch.arange(N_USERS)
    x = features.clone()
    edge_u_x = x[edge_u_id]

    pred, x_bar, q = model(x, edge_u_x, edge_u_id, adj)
    p = target_distribution(q).detach()

    label_loss = F.cross_entropy(torch.cat([1 - pred, pred], 1), user_labels)
    ae_loss = F.mse_loss(x_bar, edge_u_x)
    kl_loss = F.kl_div(q.log(), p, reduction="batchmean")
    loss = label_loss + 0.1 * ae_loss + 0.01 * kl_loss
    loss.backward()
    optimizer.step()
    return loss.item()


for epoch in range(5):
    print(epoch, train(epoch))
