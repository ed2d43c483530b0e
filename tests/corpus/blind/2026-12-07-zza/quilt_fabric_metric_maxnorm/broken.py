"""Quilt-block / fabric compatibility by collaborative metric learning.

Source: https://github.com/hand10ryo/PyTorchCML/issues/46 -- running the library's
collaborative-metric-learning example notebook fails in ``loss.backward()`` with "one of the
variables needed for gradient computation has been modified by an inplace operation". The
library's embedding models are ``nn.Embedding(..., max_norm=1)``, whose forward renormalises
the looked-up rows of the weight in place. This script reduces that to a CML trainer for a
quilting shop: quilt blocks and fabrics share a metric space, a triplet hinge pulls the fabrics a
block was sewn with towards it, and a spread-out term over the whole fabric palette (the full
embedding table) keeps fabrics apart. The palette term reads the weight before the lookups
renormalise it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "n_blocks": 40,
    "n_fabrics": 60,
    "dim": 16,
    "max_norm": 1.0,
    "margin": 0.5,
    "n_neg": 4,
    "batch": 32,
    "lr": 0.05,
    "epochs": 6,
    "spread_weight": 0.1,
}


class QuiltFabricCML(nn.Module):
    """Blocks and fabrics embedded in one unit ball; close means 'sews well together'."""

    def __init__(self, n_blocks, n_fabrics, dim, max_norm):
        super().__init__()
        self.block_emb = nn.Embedding(n_blocks, dim, max_norm=max_norm)
        self.fabric_emb = nn.Embedding(n_fabrics, dim, max_norm=max_norm)

    def forward(self, blocks, pos_fabrics, neg_fabrics):
        return self.block_emb(blocks), self.fabric_emb(pos_fabrics), self.fabric_emb(neg_fabrics)

    def palette(self):
        return self.fabric_emb.weight


def make_pairs(n_blocks, n_fabrics, n_pairs):
    """Synthetic sewing log: each block family prefers a band of fabrics."""
    blocks = torch.randint(0, n_blocks, (n_pairs,))
    band = (blocks * n_fabrics // n_blocks + torch.randint(-3, 4, (n_pairs,))) % n_fabrics
    return blocks, band


class TripletSampler:
    def __init__(self, blocks, fabrics, n_fabrics, n_neg, batch):
        self.blocks, self.fabrics = blocks, fabrics
        self.n_fabrics, self.n_neg, self.batch = n_fabrics, n_neg, batch

    def sample(self):
        idx = torch.randint(0, len(self.blocks), (self.batch,))
        neg = torch.randint(0, self.n_fabrics, (self.batch, self.n_neg))
        return self.blocks[idx].unsqueeze(1), self.fabrics[idx].unsqueeze(1), neg


def triplet_hinge(block_vec, pos_vec, neg_vec, margin):
    d_pos = (block_vec - pos_vec).pow(2).sum(-1)
    d_neg = (block_vec - neg_vec).pow(2).sum(-1)
    return F.relu(margin + d_pos - d_neg).mean()


def spread_out(table):
    gram = table @ table.t()
    off_diag = gram - torch.diag(torch.diagonal(gram))
    return off_diag.pow(2).mean()


def fit(model, optimizer, sampler, cfg):
    for epoch in range(cfg["epochs"]):
        blocks, pos, neg = sampler.sample()
        spread_loss = spread_out(model.palette())
        block_vec, pos_vec, neg_vec = model(blocks, pos, neg)
        triplet = triplet_hinge(block_vec, pos_vec, neg_vec, cfg["margin"])
        loss = triplet + cfg["spread_weight"] * spread_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch}: triplet {triplet.item():.4f} spread {spread_loss.item():.4f}")


def main():
    torch.manual_seed(11)
    cfg = CONFIG
    blocks, fabrics = make_pairs(cfg["n_blocks"], cfg["n_fabrics"], 500)
    sampler = TripletSampler(blocks, fabrics, cfg["n_fabrics"], cfg["n_neg"], cfg["batch"])
    model = QuiltFabricCML(cfg["n_blocks"], cfg["n_fabrics"], cfg["dim"], cfg["max_norm"])
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    fit(model, optimizer, sampler, cfg)


if __name__ == "__main__":
    main()
