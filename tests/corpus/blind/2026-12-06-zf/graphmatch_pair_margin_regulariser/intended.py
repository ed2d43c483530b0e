"""Deep graph matching: a graph matching network scoring pairs of graphs with a margin loss.

Source: https://github.com/Lin-Yijie/Graph-Matching-Networks/issues/10
The author was training the PyTorch port of the Graph Matching Networks (GMN) on
pairs of graphs. pairwise_loss returns one margin loss per pair,
`torch.relu(margin - labels * (1 - distance))`, and the training script then adds
the graph-vector regulariser to it in place (`loss += weight * 0.5 *
graph_vec_scale`) before `loss.backward(torch.ones_like(loss))`. ReLU saves its
output for backward, so the backward fails: "[torch.FloatTensor [20]], which is
output 0 of ReluBackward0, is at version 1; expected version 0". The node
encoder, cross-graph attention with a Sinkhorn-normalised affinity matrix and the
gated aggregator follow the GMN layout; sizes and data are the writer's.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)

N_NODES, FEAT, HID = 6, 8, 16


def sinkhorn(log_alpha, n_iters=5):
    for _ in range(n_iters):
        log_alpha = log_alpha - torch.logsumexp(log_alpha, dim=-1, keepdim=True)
        log_alpha = log_alpha - torch.logsumexp(log_alpha, dim=-2, keepdim=True)
    return log_alpha.exp()


class GraphPropMatchingLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.message_net = nn.Sequential(nn.Linear(2 * dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.node_update = nn.Sequential(nn.Linear(3 * dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, h1, h2, adj1, adj2):
        # within-graph messages
        def messages(h, adj):
            pair = torch.cat([h.unsqueeze(2).expand(-1, -1, h.shape[1], -1),
                              h.unsqueeze(1).expand(-1, h.shape[1], -1, -1)], dim=-1)
            return (self.message_net(pair) * adj.unsqueeze(-1)).sum(2)
        m1, m2 = messages(h1, adj1), messages(h2, adj2)
        # cross-graph matching through the node affinity matrix
        affinity = torch.bmm(h1, h2.transpose(1, 2))
        assign = sinkhorn(affinity)
        mu1 = h1 - torch.bmm(assign, h2)
        mu2 = h2 - torch.bmm(assign.transpose(1, 2), h1)
        h1 = h1 + self.node_update(torch.cat([h1, m1, mu1], dim=-1))
        h2 = h2 + self.node_update(torch.cat([h2, m2, mu2], dim=-1))
        return h1, h2


class GraphMatchingNet(nn.Module):
    def __init__(self, n_layers=2):
        super().__init__()
        self.encoder = nn.Linear(FEAT, HID)
        self.layers = nn.ModuleList([GraphPropMatchingLayer(HID) for _ in range(n_layers)])
        self.gate = nn.Linear(HID, 2 * HID)
        self.out = nn.Linear(HID, HID)

    def aggregate(self, h):
        g = self.gate(h)
        gated = torch.sigmoid(g[..., :HID]) * g[..., HID:]
        return self.out(gated.sum(1))

    def forward(self, x1, x2, adj1, adj2):
        h1, h2 = self.encoder(x1), self.encoder(x2)
        for layer in self.layers:
            h1, h2 = layer(h1, h2, adj1, adj2)
        return self.aggregate(h1), self.aggregate(h2)


def euclidean_distance(x, y):
    return torch.sum((x - y) ** 2, dim=-1)


def pairwise_loss(x, y, labels, margin=1.0):
    labels = labels.float()
    return torch.relu(margin - labels * (1 - euclidean_distance(x, y)))


def random_graphs(n):
    adj = (torch.rand(n, N_NODES, N_NODES) < 0.4).float()
    adj = ((adj + adj.transpose(1, 2)) > 0).float()
    return torch.randn(n, N_NODES, FEAT), adj


model = GraphMatchingNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
graph_vec_regularizer_weight = 1e-6

# pairs: the second graph is a permuted, noisy copy (label +1) or an unrelated graph (label -1)
x1, adj1 = random_graphs(20)
perm = torch.randperm(N_NODES)
x_other, adj_other = random_graphs(20)
labels = torch.where(torch.arange(20) % 2 == 0, 1, -1)
pos = (labels == 1).view(-1, 1, 1)
x2 = torch.where(pos, x1[:, perm] + 0.05 * torch.randn(20, N_NODES, FEAT), x_other)
adj2 = torch.where(pos, adj1[:, perm][:, :, perm], adj_other)

for i_iter in range(4):
    g1, g2 = model(x1, x2, adj1, adj2)
    loss = pairwise_loss(g1, g2, labels)
    graph_vec_scale = torch.mean(torch.cat([g1, g2]) ** 2)
    if graph_vec_regularizer_weight > 0:
        loss = loss.add(graph_vec_regularizer_weight * 0.5 * graph_vec_scale)
    optimizer.zero_grad()
    loss.backward(torch.ones_like(loss))
    nn.utils.clip_grad_value_(model.parameters(), 10.0)
    optimizer.step()
    print(f"iter {i_iter} loss {loss.mean().item():.4f}")
