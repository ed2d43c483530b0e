"""Multi-task click-through / conversion model: shared field embeddings, MMoE experts, ESMM heads.

Report: https://github.com/pppLang/SKNet/issues/23 -- running ``sknet.py`` of a selective-kernel network
raised "one of the variables needed for gradient computation has been modified by an inplace
operation: [torch.FloatTensor [8, 64, 32, 32]], which is output 0 of ReluBackward0, is at version 1;
expected version 0". SKConv stacks its branch outputs for a softmax attention over the branches with
``fea = conv(x).unsqueeze_(dim=1)``; each branch ends with a ReLU that saves its output, and the
in-place ``unsqueeze_`` bumps that output's version. The answer in the thread: use ``unsqueeze``
without the underscore. The training setting is the writer's: a CTR/CVR model whose experts end with
a ReLU and whose outputs are stacked the same way for the per-task softmax gates (MMoE), trained with
the ESMM losses (click on pCTR, conversion on pCTR * pCVR).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

FIELD_DIMS = [12, 8, 20, 6, 10, 15]   # vocabulary size of each categorical field
NUM_DENSE = 3
EMBED_DIM = 8
NUM_EXPERTS = 4
EXPERT_DIM = 32
BATCH_SIZE = 64


def make_synthetic_logs(num_rows=1024):
    """Categorical + dense features, a click that depends on field interactions, a conversion after a click."""
    cats = torch.stack([torch.randint(0, d, (num_rows,)) for d in FIELD_DIMS], dim=1)
    dense = torch.rand(num_rows, NUM_DENSE)
    field_effects = [torch.randn(d) for d in FIELD_DIMS]
    logit = sum(field_effects[f][cats[:, f]] for f in range(len(FIELD_DIMS)))
    logit = logit + 1.5 * field_effects[0][cats[:, 0]] * field_effects[2][cats[:, 2]] + dense[:, 0] - 1.0
    click = torch.bernoulli(torch.sigmoid(logit))
    cvr_logit = field_effects[3][cats[:, 3]] + 2.0 * dense[:, 1] - 1.5
    conversion = click * torch.bernoulli(torch.sigmoid(cvr_logit))
    return cats, dense, click, conversion


class FieldEmbedding(nn.Module):
    """One table for all fields, indexed with per-field offsets."""

    def __init__(self, field_dims, embed_dim):
        super().__init__()
        self.embedding = nn.Embedding(sum(field_dims), embed_dim)
        offsets = torch.tensor([0] + field_dims[:-1]).cumsum(0)
        self.register_buffer("offsets", offsets)
        nn.init.xavier_uniform_(self.embedding.weight)

    def forward(self, cats):
        return self.embedding(cats + self.offsets)   # (B, F, k)


class MMoE(nn.Module):
    def __init__(self, input_dim, num_experts, expert_dim, num_tasks):
        super().__init__()
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(input_dim, expert_dim), nn.ReLU()) for _ in range(num_experts)]
        )
        self.gates = nn.ModuleList([nn.Linear(input_dim, num_experts) for _ in range(num_tasks)])

    def forward(self, x):
        # each expert's output as (B, 1, D), stacked to (B, E, D) for the gates
        expert_outs = torch.cat([expert(x).unsqueeze_(dim=1) for expert in self.experts], dim=1)
        task_inputs = []
        for gate in self.gates:
            weights = F.softmax(gate(x), dim=1).unsqueeze(-1)       # (B, E, 1)
            task_inputs.append((expert_outs * weights).sum(dim=1))
        return task_inputs


class ESMM(nn.Module):
    def __init__(self):
        super().__init__()
        self.field_embedding = FieldEmbedding(FIELD_DIMS, EMBED_DIM)
        input_dim = len(FIELD_DIMS) * EMBED_DIM + NUM_DENSE
        self.mmoe = MMoE(input_dim, NUM_EXPERTS, EXPERT_DIM, num_tasks=2)
        self.ctr_tower = nn.Sequential(nn.Linear(EXPERT_DIM, 16), nn.ReLU(), nn.Linear(16, 1))
        self.cvr_tower = nn.Sequential(nn.Linear(EXPERT_DIM, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, cats, dense):
        x = torch.cat([self.field_embedding(cats).flatten(1), dense], dim=1)
        ctr_in, cvr_in = self.mmoe(x)
        p_ctr = torch.sigmoid(self.ctr_tower(ctr_in)).squeeze(1)
        p_cvr = torch.sigmoid(self.cvr_tower(cvr_in)).squeeze(1)
        return p_ctr, p_ctr * p_cvr


def auc(scores, labels):
    order = scores.argsort()
    ranks = torch.empty_like(order, dtype=torch.float)
    ranks[order] = torch.arange(1, len(scores) + 1, dtype=torch.float)
    pos = labels.bool()
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return ((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)).item()


cats, dense, click, conversion = make_synthetic_logs()
model = ESMM()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-6)

for epoch in range(3):
    permutation = torch.randperm(len(click))
    for start in range(0, len(click), BATCH_SIZE):
        idx = permutation[start:start + BATCH_SIZE]
        p_ctr, p_ctcvr = model(cats[idx], dense[idx])
        ctr_loss = F.binary_cross_entropy(p_ctr, click[idx])
        ctcvr_loss = F.binary_cross_entropy(p_ctcvr, conversion[idx])
        loss = ctr_loss + ctcvr_loss

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    with torch.no_grad():
        p_ctr, p_ctcvr = model(cats, dense)
    print(f"epoch {epoch}: loss {loss.item():.4f}  CTR AUC {auc(p_ctr, click):.3f}  CTCVR AUC {auc(p_ctcvr, conversion):.3f}")
