"""R-GCN link prediction on a small knowledge graph, trained with a hand-written sLCWA loop.

Reduced from https://github.com/pykeen/pykeen/issues/1349. The author trains the
R-GCN model (pykeen's ``RGCN``: entity representations enriched by R-GCN
message passing with a basis decomposition, DistMult interaction) during
training. Here the model is written out as pykeen builds it: the entity
representation module buffers its enriched representations
(``enriched_embeddings``, ``cache=True``) and drops the buffer in
``post_parameter_update()``; the training loop around it is written by hand
(negative sampling by corrupting tails, softplus loss, Adam).

Synthetic graph: random (head, relation, tail) triples over 30 entities and
3 relations.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_ENTITIES = 30
NUM_RELATIONS = 3
NUM_TRIPLES = 120
DIM = 16
BATCH = 32
NUM_NEGS = 2


class BasesDecomposition(nn.Module):
    def __init__(self, num_relations, input_dim, num_bases=2):
        super().__init__()
        self.bases = nn.Parameter(torch.randn(num_bases, input_dim, input_dim) / input_dim**0.5)
        self.relation_coefficients = nn.Parameter(torch.randn(num_relations, num_bases) / num_bases**0.5)

    def forward(self, x, source, target, edge_type):
        weights = torch.einsum("rb,bio->rio", self.relation_coefficients, self.bases)
        messages = torch.bmm(x[source].unsqueeze(1), weights[edge_type]).squeeze(1)
        out = torch.zeros_like(x).index_add(0, target, messages)
        degree = torch.zeros(x.shape[0]).index_add(0, target, torch.ones(target.shape[0])).clamp_min(1.0)
        return out / degree.unsqueeze(1)


class RGCNLayer(nn.Module):
    def __init__(self, num_relations, dim, activation=True):
        super().__init__()
        self.fwd = BasesDecomposition(num_relations, dim)
        self.bwd = BasesDecomposition(num_relations, dim)
        self.self_loop = nn.Linear(dim, dim)
        self.activation = activation

    def forward(self, x, source, target, edge_type):
        out = self.self_loop(x) + self.fwd(x, source, target, edge_type) + self.bwd(x, target, source, edge_type)
        return F.relu(out) if self.activation else out


class RGCNRepresentation(nn.Module):
    """Entity representations enriched by R-GCN."""

    def __init__(self, triples, num_entities, num_relations, dim, num_layers=2, cache=True):
        super().__init__()
        self.entity_embeddings = nn.Embedding(num_entities, dim)
        self.register_buffer("sources", triples[:, 0])
        self.register_buffer("edge_types", triples[:, 1])
        self.register_buffer("targets", triples[:, 2])
        self.layers = nn.ModuleList(
            [RGCNLayer(num_relations, dim, activation=i < num_layers - 1) for i in range(num_layers)]
        )
        # buffering of enriched representations
        self.enriched_embeddings = None
        self.cache = cache

    def post_parameter_update(self):
        # invalidate enriched embeddings
        self.enriched_embeddings = None

    def _real_forward_all(self):
        if self.enriched_embeddings is not None:
            return self.enriched_embeddings
        x = self.entity_embeddings.weight
        for layer in self.layers:
            x = layer(x, self.sources, self.targets, self.edge_types)
        # Cache enriched representations
        if self.cache:
            self.enriched_embeddings = x
        return x

    def forward(self, indices=None):
        x = self._real_forward_all()
        return x if indices is None else x[indices]


class RGCN(nn.Module):
    def __init__(self, triples, num_entities, num_relations, dim):
        super().__init__()
        self.entity_representations = RGCNRepresentation(triples, num_entities, num_relations, dim)
        self.relation_representations = nn.Embedding(num_relations, dim)

    def post_parameter_update(self):
        self.entity_representations.post_parameter_update()

    def score_hrt(self, hrt):
        h = self.entity_representations(hrt[:, 0])
        r = self.relation_representations(hrt[:, 1])
        t = self.entity_representations(hrt[:, 2])
        return (h * r * t).sum(dim=-1)


def corrupt_tails(batch, num_negs):
    negatives = batch.repeat_interleave(num_negs, dim=0).clone()
    negatives[:, 2] = torch.randint(0, NUM_ENTITIES, (negatives.shape[0],))
    return negatives


def train_epoch(model, optimizer, triples):
    model.train()
    order = torch.randperm(triples.shape[0])
    total = 0.0
    for start in range(0, triples.shape[0], BATCH):
        positive = triples[order[start : start + BATCH]]
        negative = corrupt_tails(positive, NUM_NEGS)
        optimizer.zero_grad()
        pos_scores = model.score_hrt(positive)
        neg_scores = model.score_hrt(negative)
        loss = F.softplus(-pos_scores).mean() + F.softplus(neg_scores).mean()
        loss.backward()
        optimizer.step()
        model.post_parameter_update()
        total += loss.item()
    return total


def main():
    heads = torch.randint(0, NUM_ENTITIES, (NUM_TRIPLES,))
    relations = torch.randint(0, NUM_RELATIONS, (NUM_TRIPLES,))
    tails = torch.randint(0, NUM_ENTITIES, (NUM_TRIPLES,))
    triples = torch.stack([heads, relations, tails], dim=1)

    model = RGCN(triples, NUM_ENTITIES, NUM_RELATIONS, DIM)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(2):
        print(f"epoch {epoch}: loss {train_epoch(model, optimizer, triples):.4f}")


if __name__ == "__main__":
    main()
