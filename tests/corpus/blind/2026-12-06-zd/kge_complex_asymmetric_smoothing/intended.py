"""ComplEx knowledge-graph embeddings trained 1-vs-all with an asymmetric focusing loss and N3.

Report: https://github.com/huggingface/pytorch-image-models/pull/1500
The author of that pull request trained with timm's ``AsymmetricLossSingleLabel``.
Its forward built the one-hot targets (``self.targets_classes``), used them in the
asymmetric focusing weights (``xs_pos = xs_pos * targets``,
``xs_neg = xs_neg * anti_targets``) and then applied label smoothing in place,
``self.targets_classes.mul_(1 - self.eps).add_(self.eps / num_classes)``. The
multiplication had saved the targets for backward, so ``loss.backward()`` raised
"one of the variables needed for gradient computation has been modified by an
inplace operation". The pull request replaced the two in-place operations with
``mul`` and ``add``.

The training setting is the writer's: link prediction on a small synthetic
knowledge graph with ComplEx (reciprocal relations, every entity scored as a
candidate tail, the N3 regulariser of Lacroix et al.), where the single-label
asymmetric loss above plays the role of the usual 1-vs-all cross-entropy.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_ENT, N_REL, RANK = 48, 5, 12
BATCH, EPOCHS, N3_WEIGHT = 64, 12, 5e-3

# --- a synthetic knowledge graph: tails follow a relation-specific permutation, with noise
perms = torch.stack([torch.randperm(N_ENT) for _ in range(N_REL)])
heads = torch.randint(0, N_ENT, (600,))
rels = torch.randint(0, N_REL, (600,))
tails = perms[rels, heads]
noisy = torch.rand(600) < 0.1
tails[noisy] = torch.randint(0, N_ENT, (int(noisy.sum()),))
train = torch.stack([heads, rels, tails], 1)
# reciprocal triples (t, r + N_REL, h): predicting heads becomes predicting tails
train = torch.cat([train, torch.stack([tails, rels + N_REL, heads], 1)])


class ComplEx(nn.Module):
    def __init__(self, n_ent, n_rel, rank, init_size=1e-1):
        super().__init__()
        self.rank = rank
        self.ent = nn.Embedding(n_ent, 2 * rank)
        self.rel = nn.Embedding(2 * n_rel, 2 * rank)
        self.ent.weight.data *= init_size
        self.rel.weight.data *= init_size

    def forward(self, h, r, t):
        lhs, rel, rhs = self.ent(h), self.rel(r), self.ent(t)
        lhs_re, lhs_im = lhs[:, : self.rank], lhs[:, self.rank :]
        rel_re, rel_im = rel[:, : self.rank], rel[:, self.rank :]
        rhs_re, rhs_im = rhs[:, : self.rank], rhs[:, self.rank :]
        all_re, all_im = self.ent.weight[:, : self.rank], self.ent.weight[:, self.rank :]
        q_re = lhs_re * rel_re - lhs_im * rel_im
        q_im = lhs_re * rel_im + lhs_im * rel_re
        scores = q_re @ all_re.t() + q_im @ all_im.t()
        factors = (
            torch.sqrt(lhs_re**2 + lhs_im**2),
            torch.sqrt(rel_re**2 + rel_im**2),
            torch.sqrt(rhs_re**2 + rhs_im**2),
        )
        return scores, factors


class N3(nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.weight = weight

    def forward(self, factors):
        norm = sum(torch.sum(torch.abs(f) ** 3) for f in factors)
        return self.weight * norm / factors[0].shape[0]


class AsymmetricLossSingleLabel(nn.Module):
    """Single-label ASL (softmax), with label smoothing, as in timm."""

    def __init__(self, gamma_pos=1, gamma_neg=4, eps=0.1):
        super().__init__()
        self.eps = eps
        self.gamma_pos = gamma_pos
        self.gamma_neg = gamma_neg
        self.logsoftmax = nn.LogSoftmax(dim=-1)
        self.targets_classes = []

    def forward(self, inputs, target):
        num_classes = inputs.size(-1)
        log_preds = self.logsoftmax(inputs)
        self.targets_classes = torch.zeros_like(inputs).scatter_(1, target.long().unsqueeze(1), 1)

        # ASL weights
        targets = self.targets_classes
        anti_targets = 1 - targets
        xs_pos = torch.exp(log_preds)
        xs_neg = 1 - xs_pos
        xs_pos = xs_pos * targets
        xs_neg = xs_neg * anti_targets
        asymmetric_w = torch.pow(1 - xs_pos - xs_neg, self.gamma_pos * targets + self.gamma_neg * anti_targets)
        log_preds = log_preds * asymmetric_w

        if self.eps > 0:  # label smoothing
            self.targets_classes = self.targets_classes.mul(1 - self.eps).add(self.eps / num_classes)

        loss = -self.targets_classes.mul(log_preds)
        return loss.sum(dim=-1).mean()


@torch.no_grad()
def mrr(model, triples):
    scores, _ = model(triples[:, 0], triples[:, 1], triples[:, 2])
    target = scores.gather(1, triples[:, 2:3])
    ranks = (scores > target).sum(1) + 1
    return (1.0 / ranks.float()).mean().item()


model = ComplEx(N_ENT, N_REL, RANK)
regularizer = N3(N3_WEIGHT)
criterion = AsymmetricLossSingleLabel(gamma_pos=0, gamma_neg=2, eps=0.1)
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)

for epoch in range(EPOCHS):
    order = torch.randperm(train.shape[0])
    total = 0.0
    for start in range(0, train.shape[0], BATCH):
        batch = train[order[start : start + BATCH]]
        scores, factors = model(batch[:, 0], batch[:, 1], batch[:, 2])
        fit = criterion(scores, batch[:, 2])
        reg = regularizer(factors)
        loss = fit + reg
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * batch.shape[0]
    if epoch % 4 == 3:
        print(f"epoch {epoch + 1}: loss {total / train.shape[0]:.4f}  train MRR {mrr(model, train):.3f}")
