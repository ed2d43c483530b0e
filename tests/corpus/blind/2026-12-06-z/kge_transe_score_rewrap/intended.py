"""TransE on a small synthetic knowledge graph, margin ranking loss against corrupted triples.

Report: https://github.com/SmartDataAnalytics/PyKEEN/pull/64 -- while collapsing the duplicated
``_compute_loss`` of PyKEEN's KGE models into the base class, the author proposed to remove the two
lines that re-wrap the scores, ``positive_scores = torch.tensor(positive_scores, dtype=torch.float,
device=self.device)`` (and the same for the negatives), because with PyTorch 1.1 training TransE from
the PyKEEN notebook failed with "RuntimeError: element 0 of tensors does not require grad and does
not have a grad_fn" (``torch.tensor`` copies the values and drops the graph); a later commit
("Fix ... with pytorch 1.1") removed them. The writer trains TransE in the same layout: a ``BaseModule`` with
the shared ``_compute_loss``, entity embeddings renormalised to unit length before every batch (the
entity-norm constraint of the TransE paper), uniform head-or-tail corruption for the negatives.
"""

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)

NUM_ENTITIES = 40
NUM_RELATIONS = 4
EMBEDDING_DIM = 16
MARGIN = 1.0
BATCH_SIZE = 32
NUM_EPOCHS = 4


def make_synthetic_kg(num_triples=256):
    """Triples from a planted translation model: the tail is the entity nearest to head + relation."""
    entity_vecs = torch.randn(NUM_ENTITIES, 8)
    relation_vecs = 0.5 * torch.randn(NUM_RELATIONS, 8)
    heads = torch.randint(0, NUM_ENTITIES, (num_triples,))
    relations = torch.randint(0, NUM_RELATIONS, (num_triples,))
    tails = torch.cdist(entity_vecs[heads] + relation_vecs[relations], entity_vecs).argmin(dim=1)
    return torch.stack([heads, relations, tails], dim=1)


def corrupt_triples(triples):
    """Replace the head or the tail (with probability 1/2 each) by a uniformly drawn entity."""
    negatives = triples.clone()
    replace_head = torch.rand(len(triples)) < 0.5
    random_entities = torch.randint(0, NUM_ENTITIES, (len(triples),))
    negatives[replace_head, 0] = random_entities[replace_head]
    negatives[~replace_head, 2] = random_entities[~replace_head]
    return negatives


def slice_triples(triples):
    return triples[:, 0:1], triples[:, 1:2], triples[:, 2:3]


class BaseModule(nn.Module):
    def __init__(self, num_entities, num_relations, embedding_dim, margin):
        super().__init__()
        self.num_entities = num_entities
        self.num_relations = num_relations
        self.embedding_dim = embedding_dim
        self.device = torch.device("cpu")
        self.entity_embeddings = nn.Embedding(num_entities, embedding_dim)
        self.criterion = nn.MarginRankingLoss(margin=margin, reduction="mean")

    def _get_entity_embeddings(self, entities):
        return self.entity_embeddings(entities).view(-1, self.embedding_dim)

    def _compute_loss(self, positive_scores, negative_scores):
        # y = -1: the scores are distances, a smaller one is better
        y = np.repeat([-1], repeats=positive_scores.shape[0])
        y = torch.tensor(y, dtype=torch.float, device=self.device)

        loss = self.criterion(positive_scores, negative_scores, y)
        return loss


class TransE(BaseModule):
    def __init__(self, num_entities, num_relations, embedding_dim, margin, scoring_fct_norm=1, lp_norm=2):
        super().__init__(num_entities, num_relations, embedding_dim, margin)
        self.scoring_fct_norm = scoring_fct_norm
        self.l_p_norm_entities = lp_norm
        self.relation_embeddings = nn.Embedding(num_relations, embedding_dim)
        self._initialize()

    def _initialize(self):
        bound = 6 / np.sqrt(self.embedding_dim)
        nn.init.uniform_(self.entity_embeddings.weight.data, a=-bound, b=bound)
        nn.init.uniform_(self.relation_embeddings.weight.data, a=-bound, b=bound)
        norms = torch.norm(self.relation_embeddings.weight, p=2, dim=1).data
        self.relation_embeddings.weight.data = self.relation_embeddings.weight.data / norms.view(-1, 1)

    def forward(self, batch_positives, batch_negatives):
        # Normalize embeddings of entities (the constraint ||e|| = 1 before every batch)
        norms = torch.norm(self.entity_embeddings.weight, p=self.l_p_norm_entities, dim=1).data
        self.entity_embeddings.weight.data = self.entity_embeddings.weight.data / norms.view(-1, 1)

        positive_scores = self._score_triples(batch_positives)
        negative_scores = self._score_triples(batch_negatives)
        return self._compute_loss(positive_scores=positive_scores, negative_scores=negative_scores)

    def _score_triples(self, triples):
        heads, relations, tails = slice_triples(triples)
        h = self._get_entity_embeddings(heads)
        r = self.relation_embeddings(relations).view(-1, self.embedding_dim)
        t = self._get_entity_embeddings(tails)
        return torch.norm(h + r - t, dim=1, p=self.scoring_fct_norm).view(-1)

    @torch.no_grad()
    def tail_ranks(self, triples):
        heads, relations, tails = slice_triples(triples)
        query = self._get_entity_embeddings(heads) + self.relation_embeddings(relations).view(-1, self.embedding_dim)
        distances = torch.cdist(query, self.entity_embeddings.weight, p=self.scoring_fct_norm)
        true_distance = distances.gather(1, tails)
        return (distances < true_distance).sum(dim=1) + 1


triples = make_synthetic_kg()
model = TransE(NUM_ENTITIES, NUM_RELATIONS, EMBEDDING_DIM, MARGIN)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for epoch in range(NUM_EPOCHS):
    permutation = torch.randperm(len(triples))
    epoch_loss = 0.0
    for start in range(0, len(triples), BATCH_SIZE):
        batch_positives = triples[permutation[start:start + BATCH_SIZE]]
        batch_negatives = corrupt_triples(batch_positives)

        optimizer.zero_grad()
        loss = model(batch_positives, batch_negatives)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()

    ranks = model.tail_ranks(triples).float()
    print(f"epoch {epoch}: loss {epoch_loss:.3f}  MRR {torch.mean(1 / ranks):.3f}  hits@10 {(ranks <= 10).float().mean():.3f}")
