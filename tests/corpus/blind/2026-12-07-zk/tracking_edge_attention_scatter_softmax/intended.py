"""Track finding with a graph network: edge classification over a hit graph, attention over incoming edges.

Source: https://github.com/rusty1s/pytorch_scatter/issues/119 ("RuntimeError on backward pass through
scatter_softmax"). torch_scatter 2.0.3's ``scatter_softmax`` recentred the scores, then called
``recentered_scores.exp_()``, ``sum_per_index.add_(eps)`` and ``recentered_scores_exp.div_(...)``:
the ``div_`` overwrites the output of ``exp_``, which the exponential saved for its backward, so a
network that used it for attention failed at ``loss.backward()`` with "one of the variables needed
for gradient computation has been modified by an inplace operation". The release that fixed it
computes ``exp()`` and ``div()`` out of place. The training setting is the writer's: an
interaction-network edge classifier over hit graphs from a toy barrel detector (hits on layers,
candidate segments between adjacent layers, true segments are those of the same particle), with a
hand-written scatter softmax, copied from the library, weighting each node's incoming messages.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_LAYERS, N_PARTICLES = 5, 6


def scatter_sum(src, index, dim_size):
    out = torch.zeros(dim_size, *src.shape[1:], dtype=src.dtype)
    return out.index_add(0, index, src)


def scatter_max(src, index, dim_size):
    out = torch.full((dim_size,) + tuple(src.shape[1:]), -1e9, dtype=src.dtype)
    idx = index.view(-1, *([1] * (src.dim() - 1))).expand_as(src)
    return out.scatter_reduce(0, idx, src, reduce="amax", include_self=False)


def scatter_softmax(src, index, dim_size, eps=1e-12):
    """Softmax of `src` over the entries sharing an index (as in torch_scatter 2.0.3)."""
    idx = index.view(-1, *([1] * (src.dim() - 1))).expand_as(src)
    max_value_per_index = scatter_max(src, index, dim_size)
    max_per_src_element = max_value_per_index.gather(0, idx)
    recentered_scores = src - max_per_src_element
    recentered_scores_exp = recentered_scores.exp()
    sum_per_index = scatter_sum(recentered_scores_exp, index, dim_size)
    normalizing_constants = sum_per_index.add(eps).gather(0, idx)
    return recentered_scores_exp.div(normalizing_constants)


def make_event():
    """Hits (r, phi, z) of straight-ish tracks on cylindrical layers, plus noise hits; candidate edges."""
    hits, pid = [], []
    for p in range(N_PARTICLES):
        phi0, curv, eta = 2 * math.pi * torch.rand(1).item(), 0.05 * torch.randn(1).item(), torch.randn(1).item()
        for layer in range(N_LAYERS):
            r = 1.0 + layer
            hits.append([r, phi0 + curv * r + 0.01 * torch.randn(1).item(), eta * r, layer])
            pid.append(p)
    for _ in range(6):
        layer = int(torch.randint(N_LAYERS, (1,)))
        hits.append([1.0 + layer, 2 * math.pi * torch.rand(1).item(), 2 * torch.randn(1).item(), layer])
        pid.append(-1)
    hits, pid = torch.tensor(hits), torch.tensor(pid)
    src, dst = [], []
    for i in range(len(hits)):
        for j in range(len(hits)):
            if hits[j, 3] == hits[i, 3] + 1:
                dphi = torch.remainder(hits[j, 1] - hits[i, 1] + math.pi, 2 * math.pi) - math.pi
                if abs(dphi) < 1.2:
                    src.append(i)
                    dst.append(j)
    src, dst = torch.tensor(src), torch.tensor(dst)
    y = ((pid[src] == pid[dst]) & (pid[src] >= 0)).float()
    x = torch.stack([hits[:, 0] / N_LAYERS, torch.cos(hits[:, 1]), torch.sin(hits[:, 1]), hits[:, 2] / 5], 1)
    return x, src, dst, y


class EdgeNetwork(nn.Module):
    def __init__(self, node_dim, hidden):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(2 * node_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, h, src, dst):
        return self.mlp(torch.cat([h[src], h[dst]], 1)).squeeze(1)


class AttentionNodeNetwork(nn.Module):
    def __init__(self, node_dim, hidden):
        super().__init__()
        self.msg = nn.Linear(2 * node_dim, hidden)
        self.score = nn.Linear(2 * node_dim, 1)
        self.update = nn.Sequential(nn.Linear(node_dim + hidden, hidden), nn.Tanh())

    def forward(self, h, src, dst):
        pair = torch.cat([h[src], h[dst]], 1)
        alpha = scatter_softmax(self.score(pair).squeeze(1), dst, h.shape[0])
        agg = scatter_sum(alpha.unsqueeze(1) * torch.tanh(self.msg(pair)), dst, h.shape[0])
        return self.update(torch.cat([h, agg], 1))


class TrackGNN(nn.Module):
    def __init__(self, in_dim=4, hidden=16, n_iters=2):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh())
        self.node_nets = nn.ModuleList(AttentionNodeNetwork(hidden, hidden) for _ in range(n_iters))
        self.edge_net = EdgeNetwork(hidden, hidden)

    def forward(self, x, src, dst):
        h = self.encoder(x)
        for node_net in self.node_nets:
            h = h + node_net(h, src, dst)
        return self.edge_net(h, src, dst)


events = [make_event() for _ in range(6)]
model = TrackGNN()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)

for epoch in range(3):
    total = 0.0
    for x, src, dst, y in events:
        logits = model(x, src, dst)
        pos_weight = (y.numel() - y.sum()) / y.sum().clamp(min=1.0)
        loss = F.binary_cross_entropy_with_logits(logits, y, pos_weight=pos_weight)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: mean loss {total / len(events):.4f}")
