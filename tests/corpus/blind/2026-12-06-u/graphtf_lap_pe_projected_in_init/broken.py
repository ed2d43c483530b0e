"""Graph transformer with Laplacian positional encodings and a virtual node, node regression.

Report: https://github.com/keras-team/keras-core/pull/663
Porting a Keras example to the PyTorch backend, the author hit "Trying to backward through the graph
a second time" at the second training step. The positional embedding was computed once, while the
model was built: a trainable ``layers.Embedding`` applied to the constant ``positions`` tensor, and the
resulting tensor was then added to the patches in every forward. Under torch its graph is freed by the
first backward, and every later step backpropagates into it again. The fix in the PR re-implements the
positional embedding as a layer that applies the embedding inside ``call``.

The report is an MLP-Mixer/FNet image classifier; the training setting is the writer's: a graph
transformer on one fixed graph whose Laplacian eigenvectors are projected by a trainable linear layer
in the model's constructor (computed once, "since the graph never changes"), with a virtual node
token that attends to every node.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N, F_IN, D, K_PE = 24, 8, 32, 6


def random_graph(n, p=0.2):
    a = (torch.rand(n, n) < p).float().triu(1)
    a = a + a.t()
    ring = torch.roll(torch.eye(n), 1, dims=1)
    return ((a + ring + ring.t()) > 0).float()


def laplacian_eigvecs(adj, k):
    deg = adj.sum(1)
    d_inv_sqrt = deg.clamp(min=1).pow(-0.5)
    lap = torch.eye(adj.shape[0]) - d_inv_sqrt[:, None] * adj * d_inv_sqrt[None, :]
    _, vecs = torch.linalg.eigh(lap)
    return vecs[:, 1 : k + 1]  # drop the trivial eigenvector


class GraphTransformerLayer(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, h, attn_mask):
        n, dim = h.shape
        q, k, v = self.qkv(self.norm1(h)).reshape(n, 3, self.heads, dim // self.heads).unbind(1)
        scores = torch.einsum("ihd,jhd->hij", q, k) / (dim // self.heads) ** 0.5
        scores = scores.masked_fill(~attn_mask, float("-inf"))
        att = torch.einsum("hij,jhd->ihd", scores.softmax(-1), v).reshape(n, dim)
        h = h + self.out(att)
        return h + self.ff(self.norm2(h))


class GraphTransformer(nn.Module):
    def __init__(self, adj, eigvecs, layers=2):
        super().__init__()
        self.node_in = nn.Linear(F_IN, D)
        self.pe_proj = nn.Linear(K_PE, D)
        self.virtual_node = nn.Parameter(torch.zeros(1, D))
        self.layers = nn.ModuleList([GraphTransformerLayer(D) for _ in range(layers)])
        self.head = nn.Linear(D, 1)
        # the graph is fixed, so its positional encoding is projected once here
        self.pe = self.pe_proj(eigvecs)
        n = adj.shape[0]
        mask = torch.zeros(n + 1, n + 1, dtype=torch.bool)
        mask[:n, :n] = (adj + torch.eye(n)) > 0
        mask[n, :] = True  # the virtual node attends to every node
        mask[:, n] = True  # and every node attends to it
        self.register_buffer("attn_mask", mask)

    def forward(self, x):
        h = self.node_in(x) + self.pe
        h = torch.cat([h, self.virtual_node], 0)
        for layer in self.layers:
            h = layer(h, self.attn_mask)
        return self.head(h[:-1]).squeeze(-1)


adj = random_graph(N)
eigvecs = laplacian_eigvecs(adj, K_PE)
x = torch.randn(N, F_IN)
# target: a smoothed node signal, so structure matters
y = (adj @ x[:, 0] + x[:, 1]) / adj.sum(1)
train_mask = torch.rand(N) < 0.7

model = GraphTransformer(adj, eigvecs)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)

for epoch in range(5):
    model.train()
    pred = model(x)
    loss = F.mse_loss(pred[train_mask], y[train_mask])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        val = F.mse_loss(model(x)[~train_mask], y[~train_mask])
    print(f"epoch {epoch}: train {loss.item():.4f} val {val.item():.4f}")
