"""Weather forecasting on a mesh: encoder-processor-decoder GNN with a local Moran's I input channel.

Source: https://github.com/konstantinklemmer/pe-gnn/issues/5
PE-GNN's helper ``lw_tensor_local_moran(y, w_sparse)`` standardises a tensor and
multiplies it by a scipy sparse spatial-weights matrix (``w_sparse * z``), which
turns the tensor into a numpy array; when the tensor requires grad this fails with
"Can't call numpy() on Tensor that requires grad", and the maintainer's answer is to
pass it detached (``lw_tensor_local_moran(x.detach(), w)``), as PE-GNN's own example
does for the Moran's I of an input. The training setting is the writer's: a
GraphCast-style model on a small spherical mesh (kNN graph, MLP encoder, two
message-passing processor layers, MLP decoder predicting the state increment) whose
input carries the local Moran's I of the temperature field, trained on a two-step
autoregressive rollout. The second rollout step feeds the model its own prediction,
and the Moran's I of that prediction goes through the numpy weights matrix (a dense
numpy kNN matrix stands in for the report's scipy.sparse one).
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)

N_NODES, K, N_VARS, HIDDEN, ROLLOUT = 96, 6, 3, 64, 2


def fibonacci_sphere(n):
    i = np.arange(n) + 0.5
    phi = np.arccos(1 - 2 * i / n)
    theta = math.pi * (1 + 5 ** 0.5) * i
    return np.stack([np.cos(theta) * np.sin(phi), np.sin(theta) * np.sin(phi), np.cos(phi)], 1)


def knn_graph(xyz, k):
    d = ((xyz[:, None, :] - xyz[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    nbr = np.argsort(d, 1)[:, :k]
    src = np.repeat(np.arange(len(xyz)), k)
    dst = nbr.reshape(-1)
    w = np.zeros((len(xyz), len(xyz)), dtype=np.float32)
    w[src, dst] = 1.0 / k
    return torch.tensor(np.stack([src, dst])), w


def lw_tensor_local_moran(y, w_knn):
    """Local Moran's I of a node field y (n,), with a row-standardised weights matrix."""
    y = y.reshape(-1)
    n_1 = len(y) - 1
    z = (y - y.mean()) / y.std()
    den = (z * z).sum()
    zl = torch.tensor(np.dot(w_knn, z), dtype=torch.float32)
    mi = n_1 * z * zl / den
    mi = torch.nan_to_num(mi)
    return (mi - mi.min()) / (mi.max() - mi.min() + 1e-8)


class MLP(nn.Sequential):
    def __init__(self, i, o):
        super().__init__(nn.Linear(i, HIDDEN), nn.SiLU(), nn.Linear(HIDDEN, o), nn.LayerNorm(o))


class InteractionLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.edge_mlp = MLP(3 * HIDDEN, HIDDEN)
        self.node_mlp = MLP(2 * HIDDEN, HIDDEN)

    def forward(self, h, e, edge_index):
        src, dst = edge_index
        e = e + self.edge_mlp(torch.cat([h[src], h[dst], e], -1))
        agg = torch.zeros_like(h).index_add(0, dst, e)
        h = h + self.node_mlp(torch.cat([h, agg], -1))
        return h, e


class MeshForecaster(nn.Module):
    def __init__(self, static, edge_feats, edge_index, w_knn):
        super().__init__()
        self.register_buffer("static", static)
        self.register_buffer("edge_feats", edge_feats)
        self.register_buffer("edge_index", edge_index)
        self.w_knn = w_knn
        self.node_enc = MLP(N_VARS + 1 + static.shape[1], HIDDEN)
        self.edge_enc = MLP(edge_feats.shape[1], HIDDEN)
        self.processor = nn.ModuleList([InteractionLayer() for _ in range(2)])
        self.decoder = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.SiLU(), nn.Linear(HIDDEN, N_VARS))

    def forward(self, state):
        moran = lw_tensor_local_moran(state[:, 0], self.w_knn)
        h = self.node_enc(torch.cat([state, moran[:, None], self.static], -1))
        e = self.edge_enc(self.edge_feats)
        for layer in self.processor:
            h, e = layer(h, e, self.edge_index)
        return state + self.decoder(h)


xyz = fibonacci_sphere(N_NODES)
edge_index, w_knn = knn_graph(xyz, K)
pos = torch.tensor(xyz, dtype=torch.float32)
static = torch.cat([pos, torch.sin(3 * pos)], -1)
rel = pos[edge_index[1]] - pos[edge_index[0]]
edge_feats = torch.cat([rel, rel.norm(dim=-1, keepdim=True)], -1)

model = MeshForecaster(static, edge_feats, edge_index, w_knn)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)


def make_trajectory():
    """Synthetic advected fields: ROLLOUT+1 consecutive states on the mesh."""
    phase = torch.rand(1) * 6.28
    states = []
    for t in range(ROLLOUT + 1):
        lon = torch.atan2(pos[:, 1], pos[:, 0]) + 0.2 * t + phase
        temp = torch.sin(2 * lon) * torch.cos(pos[:, 2] * 3)
        wind_u = torch.cos(lon) * (1 - pos[:, 2] ** 2)
        wind_v = 0.5 * torch.sin(lon + pos[:, 2])
        states.append(torch.stack([temp, wind_u, wind_v], -1) + 0.01 * torch.randn(N_NODES, N_VARS))
    return states


for step in range(1, 7):
    traj = make_trajectory()
    state = traj[0]
    loss = 0.0
    for t in range(1, ROLLOUT + 1):
        state = model(state)
        loss = loss + F.mse_loss(state, traj[t]) / ROLLOUT
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 3 == 0:
        print(f"step {step}: rollout loss {loss.item():.4f}")
