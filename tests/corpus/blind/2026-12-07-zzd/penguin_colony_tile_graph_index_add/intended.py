"""Penguin colony counting from aerial survey tiles with a hand-written message-passing network.

Source: https://github.com/pyg-team/pytorch_geometric/issues/7283

The report: the author stacked two heterogeneous attention layers of their own (built on PyG's
MessagePassing, HAN-like) and got "one of the variables needed for gradient computation has been
modified by an inplace operation", detected in ScatterAddBackward0 inside the first layer's
propagate. The answer on the thread: the layer works in place on a tensor the graph still needs;
cloning the first layer's output before the second layer (out = out.clone()) made training run, with
the same gradients.

Reduction: each survey image is cut into tiles; tiles are graph nodes linked to their neighbours.
A message-passing layer aggregates neighbour messages into the node features with index_add_ (the
scatter-add of the report) and two such layers feed a per-tile density head; the colony count of an
image is the sum of its tiles' densities.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

SURVEY = {"images": 6, "grid": 4, "tile_features": 10, "hidden": 24, "lr": 3e-3, "epochs": 4}


def grid_edges(grid, n_images):
    """4-neighbour edges between tiles of each image (both directions), offset per image."""
    src, dst = [], []
    for img in range(n_images):
        base = img * grid * grid
        for r in range(grid):
            for c in range(grid):
                i = base + r * grid + c
                if c + 1 < grid:
                    src += [i, i + 1]
                    dst += [i + 1, i]
                if r + 1 < grid:
                    src += [i, i + grid]
                    dst += [i + grid, i]
    return torch.tensor(src), torch.tensor(dst)


class TileMessageLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.message = nn.Linear(dim, dim)
        self.update = nn.Linear(dim, dim)

    def forward(self, h, src, dst, deg):
        msgs = self.message(h)[src] / deg[dst].unsqueeze(-1)
        h = h.clone()
        h.index_add_(0, dst, msgs)
        return torch.tanh(self.update(h))


class ColonyCounter(nn.Module):
    def __init__(self, in_dim, dim):
        super().__init__()
        self.embed = nn.Linear(in_dim, dim)
        self.layers = nn.ModuleList([TileMessageLayer(dim), TileMessageLayer(dim)])
        self.density = nn.Linear(dim, 1)

    def forward(self, x, src, dst, deg, image_of_tile, n_images):
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h, src, dst, deg)
        per_tile = F.softplus(self.density(h)).squeeze(-1)
        return torch.zeros(n_images).index_add(0, image_of_tile, per_tile)


def make_survey(cfg):
    n_tiles = cfg["images"] * cfg["grid"] ** 2
    x = torch.randn(n_tiles, cfg["tile_features"])
    birds_per_tile = F.relu(x[:, 0] * 3.0 + 2.0).round()
    image_of_tile = torch.arange(cfg["images"]).repeat_interleave(cfg["grid"] ** 2)
    counts = torch.zeros(cfg["images"]).index_add(0, image_of_tile, birds_per_tile)
    return x, image_of_tile, counts


def train(cfg):
    x, image_of_tile, counts = make_survey(cfg)
    src, dst = grid_edges(cfg["grid"], cfg["images"])
    deg = torch.zeros(x.shape[0]).index_add(0, dst, torch.ones(dst.shape[0]))
    counter = ColonyCounter(cfg["tile_features"], cfg["hidden"])
    optim = torch.optim.AdamW(counter.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        pred = counter(x, src, dst, deg, image_of_tile, cfg["images"])
        count_loss = F.smooth_l1_loss(torch.log1p(pred), torch.log1p(counts))
        optim.zero_grad()
        count_loss.backward()
        optim.step()
        mae = (pred - counts).abs().mean().item()
        print(f"epoch {epoch} loss {count_loss.item():.4f} count MAE {mae:.1f}")


if __name__ == "__main__":
    train(SURVEY)
