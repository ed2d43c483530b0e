"""Attention model for the TSP trained with REINFORCE and a greedy-rollout baseline (Kool et al. layout).

Report: https://github.com/yaohungt/Multimodal-Transformer/issues/30
The Multimodal Transformer's multi-head attention projects query, key and value with one fused
in-projection, splits the result with ``chunk`` and then scales the query in place
(``q *= self.scaling``); from PyTorch 1.8 this line raised a RuntimeError about an in-place
operation, and the accepted fix was ``q = q * self.scaling``. The training setting is the
writer's: the same attention block is the graph encoder of an attention model for the
travelling salesman problem, trained with REINFORCE against a greedy rollout of a frozen
baseline copy. On current PyTorch the in-place scaling of a ``chunk`` output is refused as an
in-place modification of one of several views.
"""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_NODES, DIM, HEADS, BATCH = 10, 32, 4, 16


class MultiheadAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.scaling = self.head_dim ** -0.5
        self.in_proj = nn.Linear(dim, 3 * dim)
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        q *= self.scaling
        q, k, v = (t.view(b, n, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        attn = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, d)
        return self.out_proj(out)


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.mha = MultiheadAttention(dim, heads)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, h):
        h = self.n1(h + self.mha(h))
        return self.n2(h + self.ff(h))


class AttentionModel(nn.Module):
    def __init__(self, dim=DIM, heads=HEADS, layers=2):
        super().__init__()
        self.init_embed = nn.Linear(2, dim)
        self.layers = nn.ModuleList(EncoderLayer(dim, heads) for _ in range(layers))
        self.first_placeholder = nn.Parameter(torch.randn(dim))
        self.project_context = nn.Linear(2 * dim, dim)
        self.project_keys = nn.Linear(dim, dim)

    def forward(self, coords, greedy=False):
        h = self.init_embed(coords)
        for layer in self.layers:
            h = layer(h)
        graph = h.mean(1)
        keys = self.project_keys(h)
        b, n, d = h.shape
        visited = torch.zeros(b, n, dtype=torch.bool)
        last = self.first_placeholder.expand(b, d)
        tour, logps = [], []
        for _ in range(n):
            query = self.project_context(torch.cat([graph, last], -1))
            logits = 10 * torch.tanh((keys @ query[:, :, None]).squeeze(-1) / math.sqrt(d))
            logits = logits.masked_fill(visited, float("-inf"))
            logp = F.log_softmax(logits, -1)
            idx = logp.argmax(-1) if greedy else torch.multinomial(logp.exp(), 1).squeeze(-1)
            logps.append(logp.gather(1, idx[:, None]).squeeze(1))
            tour.append(idx)
            visited = visited.scatter(1, idx[:, None], True)
            last = h[torch.arange(b), idx]
        return torch.stack(tour, 1), torch.stack(logps, 1).sum(1)


def tour_length(coords, tour):
    ordered = coords.gather(1, tour[..., None].expand(-1, -1, 2))
    return (ordered - ordered.roll(-1, dims=1)).norm(dim=-1).sum(1)


model = AttentionModel()
baseline = copy.deepcopy(model).eval()
for p in baseline.parameters():
    p.requires_grad_(False)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)

for epoch in range(2):
    for step in range(3):
        coords = torch.rand(BATCH, N_NODES, 2)
        tour, log_likelihood = model(coords)
        cost = tour_length(coords, tour)
        with torch.no_grad():
            bl_tour, _ = baseline(coords, greedy=True)
            bl_cost = tour_length(coords, bl_tour)
        reinforce_loss = ((cost - bl_cost) * log_likelihood).mean()
        optimizer.zero_grad()
        reinforce_loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        print(f"epoch {epoch} step {step} cost {cost.mean().item():.3f} baseline {bl_cost.mean().item():.3f}")
    # greedy rollout baseline update (the paper's paired t-test is left out)
    baseline.load_state_dict(model.state_dict())
