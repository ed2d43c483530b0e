"""Listwise learning to rank (ListNet) over query groups with a hand-written softmax: corrected.

As broken.py, with the normalisation done out of place, as the pull request did: the ``exp``
output the backward needs is left untouched.

Reduced from https://github.com/pytorch/pytorch/pull/5842 ("[distributions] Avoid in-place ops
in BoltzmannTransform"). The transform mapped logits to the simplex the numerically stable way,
``probs = (logits - logits.max(-1, True)[0]).exp()`` followed by ``probs /= probs.sum(-1, True)``;
the ``exp`` keeps its own output for the backward, and the in-place division overwrites that
output, so ``.backward()`` failed with "one of the variables needed for gradient computation has
been modified by an inplace operation". The pull request made those operations out of place.

The training setting is the writer's: a ListNet ranker whose top-one probabilities are computed by
the same stable-softmax helper, written the way the transform was, over padded query groups of
documents with graded relevance labels.
"""

import torch
import torch.nn as nn

torch.manual_seed(0)

N_FEATURES = 12
MAX_DOCS = 8
QUERIES_PER_BATCH = 6
N_QUERIES = 48


def make_queries(n_queries):
    """Synthetic LETOR-style data: features, graded labels in {0..3}, a mask for padded documents."""
    w_true = torch.randn(N_FEATURES)
    feats = torch.randn(n_queries, MAX_DOCS, N_FEATURES)
    n_docs = torch.randint(4, MAX_DOCS + 1, (n_queries,))
    mask = torch.arange(MAX_DOCS)[None, :] < n_docs[:, None]
    score = feats @ w_true + 0.3 * torch.randn(n_queries, MAX_DOCS)
    labels = torch.bucketize(score, torch.tensor([-1.0, 0.5, 1.5])).float()
    labels = labels.masked_fill(~mask, 0.0)
    return feats, labels, mask


class Scorer(nn.Module):
    """Pointwise scoring network applied to every document of a query."""

    def __init__(self, d_in, hidden=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)


def stable_softmax(logits, mask):
    """Top-one probabilities over the valid documents of each query (padded slots get 0)."""
    logits = logits.masked_fill(~mask, float("-inf"))
    probs = (logits - logits.max(-1, True)[0]).exp()
    return probs / probs.sum(-1, True)


def listnet_loss(scores, labels, mask):
    """Cross entropy between the label and the score top-one distributions (Cao et al., 2007)."""
    target = stable_softmax(labels, mask)
    pred = stable_softmax(scores, mask)
    ce = -(target * torch.log(pred.clamp_min(1e-12))).sum(-1)
    return ce.mean()


@torch.no_grad()
def ndcg_at_k(scores, labels, mask, k=5):
    scores = scores.masked_fill(~mask, float("-inf"))
    order = scores.argsort(-1, descending=True)[:, :k]
    gains = (2.0 ** labels.gather(1, order) - 1.0)
    discounts = 1.0 / torch.log2(torch.arange(2, k + 2).float())
    dcg = (gains * discounts).sum(-1)
    ideal = (2.0 ** labels.sort(-1, descending=True)[0][:, :k] - 1.0)
    idcg = (ideal * discounts).sum(-1).clamp_min(1e-9)
    return (dcg / idcg).mean().item()


feats, labels, mask = make_queries(N_QUERIES)
ranker = Scorer(N_FEATURES)
optimizer = torch.optim.Adam(ranker.parameters(), lr=3e-3)

for epoch in range(3):
    perm = torch.randperm(N_QUERIES)
    for start in range(0, N_QUERIES, QUERIES_PER_BATCH):
        idx = perm[start:start + QUERIES_PER_BATCH]
        scores = ranker(feats[idx])
        loss = listnet_loss(scores, labels[idx], mask[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: listnet {loss.item():.4f}  ndcg@5 {ndcg_at_k(ranker(feats), labels, mask):.3f}")
