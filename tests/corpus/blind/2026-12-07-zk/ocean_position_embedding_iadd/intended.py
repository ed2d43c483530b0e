"""Ocean-state emulator on a land-masked grid graph: a spatio-temporal synchronous graph network.

Source: https://github.com/LibCity/Bigscity-LibCity/issues/303 (STSGCN: "RuntimeError: one of the
variables needed for gradient computation has been modified by an inplace operation"). In LibCity's
STSGCN the input goes through ``torch.relu(self.first_layer_embedding(data))`` and then into the
first STSGCL layer, whose ``PositionEmbedding.forward`` adds the learned temporal and spatial
embeddings with ``data += self.temporal_emb`` / ``data += self.spatial_emb``: an in-place add on the
ReLU's output, which ReLU saved for its backward. The maintainers' fix (PR #305) passes
``data.clone()`` into each layer. The training setting is the writer's: an emulator of sea-surface
temperature and sea-surface height anomalies on the ocean cells of a small basin (land cells masked
out of the graph), predicting the next steps from a window of past states.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

H, W = 6, 8
T_IN, T_OUT, C_IN = 5, 2, 2
HIDDEN = 16


def ocean_graph(h, w):
    """Ocean cells of a rectangular basin with a peninsula, and their 4-neighbour adjacency."""
    land = torch.zeros(h, w, dtype=torch.bool)
    land[:3, 3] = True
    land[0, :2] = True
    ocean = (~land).flatten().nonzero().squeeze(1)
    index = -torch.ones(h * w, dtype=torch.long)
    index[ocean] = torch.arange(len(ocean))
    n = len(ocean)
    adj = torch.eye(n)
    for k, cell in enumerate(ocean.tolist()):
        r, c = divmod(cell, w)
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            rr, cc = r + dr, c + dc
            if 0 <= rr < h and 0 <= cc < w and index[rr * w + cc] >= 0:
                adj[k, index[rr * w + cc]] = 1.0
    return ocean, adj


def localized_adj(a, steps=3):
    """Block adjacency over `steps` consecutive time slices, each node linked to itself in time."""
    n = a.shape[0]
    big = torch.zeros(n * steps, n * steps)
    for i in range(steps):
        big[i * n:(i + 1) * n, i * n:(i + 1) * n] = a
    for k in range(steps - 1):
        idx = torch.arange(n)
        big[k * n + idx, (k + 1) * n + idx] = 1.0
        big[(k + 1) * n + idx, k * n + idx] = 1.0
    deg = big.sum(1, keepdim=True)
    return big / deg


class PositionEmbedding(nn.Module):
    def __init__(self, t, n, c):
        super().__init__()
        self.temporal_emb = nn.Parameter(torch.randn(1, t, 1, c) * 0.1)
        self.spatial_emb = nn.Parameter(torch.randn(1, 1, n, c) * 0.1)

    def forward(self, data):
        data += self.temporal_emb
        data += self.spatial_emb
        return data


class GraphConvGLU(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.lin = nn.Linear(c_in, 2 * c_out)
        self.c_out = c_out

    def forward(self, x, adj):
        x = self.lin(torch.matmul(adj, x))
        lhs, rhs = x.split(self.c_out, -1)
        return lhs * torch.sigmoid(rhs)


class STSGCL(nn.Module):
    """One synchronous layer: a graph conv over each window of 3 consecutive time slices."""

    def __init__(self, t, n, c_in, c_out):
        super().__init__()
        self.t, self.n = t, n
        self.pos = PositionEmbedding(t, n, c_in)
        self.gcms = nn.ModuleList(GraphConvGLU(c_in, c_out) for _ in range(t - 2))

    def forward(self, data, adj):
        data = self.pos(data)
        outs = []
        for i in range(self.t - 2):
            win = data[:, i:i + 3].reshape(data.shape[0], 3 * self.n, -1)
            h = self.gcms[i](win, adj)[:, self.n:2 * self.n]  # keep the middle slice
            outs.append(h.unsqueeze(1))
        return torch.cat(outs, dim=1)


class OceanEmulator(nn.Module):
    def __init__(self, n, adj):
        super().__init__()
        self.register_buffer("adj", localized_adj(adj))
        self.first_layer_embedding = nn.Linear(C_IN, HIDDEN)
        self.layers = nn.ModuleList([STSGCL(T_IN, n, HIDDEN, HIDDEN)])
        t_left = T_IN - 2
        self.head = nn.Linear(t_left * HIDDEN, T_OUT * C_IN)

    def forward(self, x):
        data = torch.relu(self.first_layer_embedding(x))
        for layer in self.layers:
            data = layer(data.clone(), self.adj)
        b, t, n, c = data.shape
        out = self.head(data.permute(0, 2, 1, 3).reshape(b, n, t * c))
        return out.reshape(b, n, T_OUT, C_IN).permute(0, 2, 1, 3)


def synthetic_states(ocean, n_samples):
    """Advected warm anomaly and a height signal on the ocean cells, as windows of T_IN + T_OUT steps."""
    yy, xx = torch.meshgrid(torch.arange(H).float(), torch.arange(W).float(), indexing="ij")
    seqs = []
    for _ in range(n_samples):
        cx, cy, u = torch.rand(1) * W, torch.rand(1) * H, 0.3 + 0.4 * torch.rand(1)
        frames = []
        for t in range(T_IN + T_OUT):
            sst = torch.exp(-((xx - cx - u * t) ** 2 + (yy - cy) ** 2) / 4.0)
            ssh = 0.5 * torch.sin(0.6 * xx + 0.3 * t) * torch.cos(0.4 * yy)
            frames.append(torch.stack([sst, ssh], -1).reshape(H * W, 2)[ocean])
        seqs.append(torch.stack(frames))
    seqs = torch.stack(seqs) + 0.02 * torch.randn(n_samples, T_IN + T_OUT, len(ocean), 2)
    return seqs[:, :T_IN], seqs[:, T_IN:]


ocean, adj = ocean_graph(H, W)
x_all, y_all = synthetic_states(ocean, 32)
model = OceanEmulator(len(ocean), adj)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(3):
    for start in range(0, 32, 8):
        x, y = x_all[start:start + 8], y_all[start:start + 8]
        pred = model(x)
        loss = F.smooth_l1_loss(pred, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
