"""Two-tower retrieval model (query tower, item tower) trained with in-batch negatives plus a cache of
hard negatives mined from earlier batches.

Report: https://github.com/Skype-line/X-Avatar/issues/12 (``masked_softmax`` in
``lib/model/helpers.py`` masks its input in place, ``vec[~mask.bool()] = -100`` before ``torch.max``,
and training fails with "Output 0 of ReshapeAliasBackward0 is a view and is being modified inplace.
This view is the output of a function that returns multiple views"). The report is an avatar model;
the training setting is the writer's: the item tower encodes title and description tokens in one pass,
splits the result back into the two fields with ``torch.split`` and max-pools each field after masking
its padding the same way, in place.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, DIM = 200, 32
N_ITEMS, N_QUERIES = 120, 240
Q_LEN, TITLE_LEN, DESC_LEN = 6, 5, 10
BATCH, N_HARD, CACHE_SIZE = 24, 4, 96
TEMP = 0.1


def make_catalogue():
    def tokens(n, length):
        lengths = torch.randint(2, length + 1, (n,))
        toks = torch.randint(1, VOCAB, (n, length))
        mask = torch.arange(length) < lengths.unsqueeze(1)
        return toks * mask, mask

    titles, title_mask = tokens(N_ITEMS, TITLE_LEN)
    descs, desc_mask = tokens(N_ITEMS, DESC_LEN)
    positives = torch.randint(0, N_ITEMS, (N_QUERIES,))
    extra = torch.randint(1, VOCAB, (N_QUERIES, Q_LEN - TITLE_LEN))
    queries = torch.cat([titles[positives], extra], 1)
    query_mask = queries > 0
    return (titles, title_mask, descs, desc_mask), (queries, query_mask), positives


class TokenEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.mlp = nn.Sequential(nn.Linear(DIM, 2 * DIM), nn.GELU(), nn.Linear(2 * DIM, DIM))

    def forward(self, tokens):
        e = self.emb(tokens)
        return e + self.mlp(e)


def masked_max(tok, mask):
    tok = tok.masked_fill(~mask.unsqueeze(-1), -100.0)
    return tok.max(1).values


class QueryTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = TokenEncoder()
        self.proj = nn.Linear(DIM, DIM)

    def forward(self, tokens, mask):
        return F.normalize(self.proj(masked_max(self.enc(tokens), mask)), dim=-1)


class ItemTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = TokenEncoder()
        self.proj = nn.Linear(2 * DIM, DIM)

    def forward(self, title, title_mask, desc, desc_mask):
        tok = self.enc(torch.cat([title, desc], 1))
        title_tok, desc_tok = tok.split([title.size(1), desc.size(1)], dim=1)
        pooled = torch.cat([masked_max(title_tok, title_mask), masked_max(desc_tok, desc_mask)], -1)
        return F.normalize(self.proj(pooled), dim=-1)


def train(steps=15):
    items, (queries, query_mask), positives = make_catalogue()
    query_tower, item_tower = QueryTower(), ItemTower()
    optimizer = torch.optim.Adam(list(query_tower.parameters()) + list(item_tower.parameters()), lr=2e-3)
    cache_ids = torch.empty(0, dtype=torch.long)
    for step in range(steps):
        batch = torch.randint(0, N_QUERIES, (BATCH,))
        pos_ids = positives[batch]
        q = query_tower(queries[batch], query_mask[batch])
        # hard negatives: cached items the query tower currently scores highest
        if cache_ids.numel() > 0:
            with torch.no_grad():
                cached = item_tower(*(field[cache_ids] for field in items))
                hard = cache_ids[(q @ cached.T).topk(N_HARD, dim=1).indices].flatten()
            cand_ids = torch.cat([pos_ids, hard])
        else:
            cand_ids = pos_ids
        cand = item_tower(*(field[cand_ids] for field in items))
        logits = q @ cand.T / TEMP
        same_item = pos_ids.unsqueeze(1) == cand_ids.unsqueeze(0)
        same_item[torch.arange(BATCH), torch.arange(BATCH)] = False
        logits = logits.masked_fill(same_item, -1e4)
        loss = F.cross_entropy(logits, torch.arange(BATCH))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        cache_ids = torch.cat([cache_ids, pos_ids])[-CACHE_SIZE:]
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.3f}")


if __name__ == "__main__":
    train()
