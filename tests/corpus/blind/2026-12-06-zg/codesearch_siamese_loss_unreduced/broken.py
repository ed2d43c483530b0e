"""Code search: a query encoder and a code encoder trained on (docstring, function) pairs.

Report: https://github.com/MrChenFeng/Adaptive-Soft-Contrastive-Learning_ICPR2022/issues/2
In that repository the training loop calls ``loss.backward()`` on whatever the selected model
returns; with the contrastive models it is a scalar, but with the BYOL model the regression loss
``2 - 2 * cos(p, z)`` comes back per sample, and training stopped with "grad can be implicitly
created only for scalar outputs" (the author asked whether it must be summed). The training
setting is the writer's: a code-search dual encoder (bag-of-subtokens query tower, convolutional
code tower) whose objective is chosen by a flag: in-batch InfoNCE, or a BYOL/SimSiam-style
alignment with predictors and stop-gradients.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, DIM, Q_LEN, C_LEN = 200, 32, 8, 24
OBJECTIVE = "byol"


class QueryEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, DIM, mode="mean")
        self.proj = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, DIM))

    def forward(self, tokens):
        return self.proj(self.emb(tokens))


class CodeEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.conv = nn.Conv1d(DIM, DIM, 3, padding=1)
        self.proj = nn.Linear(DIM, DIM)

    def forward(self, tokens):
        h = F.relu(self.conv(self.emb(tokens).transpose(1, 2)))
        return self.proj(h.max(dim=2).values)


def infonce(zq, zc, temperature=0.05):
    logits = F.normalize(zq, dim=-1) @ F.normalize(zc, dim=-1).T / temperature
    return F.cross_entropy(logits, torch.arange(zq.shape[0]))


def regression(p, z):
    return 2 - 2 * (F.normalize(p, dim=-1) * F.normalize(z, dim=-1)).sum(dim=-1)


class CodeSearchModel(nn.Module):
    def __init__(self, objective):
        super().__init__()
        self.objective = objective
        self.query_encoder = QueryEncoder()
        self.code_encoder = CodeEncoder()
        self.predictor = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, DIM))

    def forward(self, query_tokens, code_tokens):
        zq = self.query_encoder(query_tokens)
        zc = self.code_encoder(code_tokens)
        if self.objective == "infonce":
            return infonce(zq, zc)
        pq, pc = self.predictor(zq), self.predictor(zc)
        return regression(pq, zc.detach()) + regression(pc, zq.detach())

    @torch.no_grad()
    def mrr(self, query_tokens, code_tokens):
        zq = F.normalize(self.query_encoder(query_tokens), dim=-1)
        zc = F.normalize(self.code_encoder(code_tokens), dim=-1)
        ranks = (zq @ zc.T).argsort(dim=1, descending=True)
        pos = (ranks == torch.arange(len(zq))[:, None]).float().argmax(dim=1)
        return (1.0 / (pos + 1).float()).mean().item()


def make_pairs(n):
    topic = torch.randint(0, 20, (n, 1))
    code = (topic * 10 + torch.randint(0, 10, (n, C_LEN))) % VOCAB
    query = (topic * 10 + torch.randint(0, 10, (n, Q_LEN))) % VOCAB
    return query, code


model = CodeSearchModel(OBJECTIVE)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
queries, codes = make_pairs(96)

for epoch in range(2):
    for i in range(0, 96, 32):
        loss = model(queries[i:i + 32], codes[i:i + 32])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f} mrr {model.mrr(queries[:32], codes[:32]):.3f}")
