"""Reduced from https://github.com/pytorch/pytorch/issues/26596

The author trained embeddings with nn.Embedding(n, d, max_norm=True) and, in the same forward, used the
whole table (embedding.weight @ W.t()) and a lookup (embedding(idx) @ W.t()). loss.backward() raised
"one of the variables needed for gradient computation has been modified by an inplace operation"; the
error went away without max_norm, or with the two lines swapped. The answer (the note added to
nn.Embedding's documentation by https://github.com/pytorch/pytorch/pull/45595): with max_norm set, the
lookup renormalises the looked-up rows of `weight` in place, so a computation that used `weight` before
the lookup must use `embedding.weight.clone()`.

Here the same pattern in a recommender: a two-tower model scores every item of the catalogue with the
item table (full softmax over items) and adds a BPR term on looked-up positive and negative items; the
item table has max_norm=1.0.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_USERS, N_ITEMS, DIM = 50, 40, 16


class CatalogueRecommender(nn.Module):
    def __init__(self, n_users, n_items, dim):
        super().__init__()
        self.user_emb = nn.Embedding(n_users, dim)
        self.item_emb = nn.Embedding(n_items, dim, max_norm=1.0)
        self.user_tower = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, users, pos_items, neg_items):
        u = self.user_tower(self.user_emb(users))
        # score the whole catalogue (full softmax over the items)
        pos = self.item_emb(pos_items)
        neg = self.item_emb(neg_items)
        # the lookups renormalise their rows in place first; the catalogue is scored with the renormalised table
        catalogue_scores = u @ self.item_emb.weight.t()
        pos_scores = (u * pos).sum(-1)
        neg_scores = (u * neg).sum(-1)
        return catalogue_scores, pos_scores, neg_scores


def make_interactions(n, generator):
    users = torch.randint(0, N_USERS, (n,), generator=generator)
    # each user prefers a block of items: item = (user * 7 + noise) mod N_ITEMS
    items = (users * 7 + torch.randint(0, 3, (n,), generator=generator)) % N_ITEMS
    negs = torch.randint(0, N_ITEMS, (n,), generator=generator)
    return users, items, negs


g = torch.Generator().manual_seed(1)
users, items, negs = make_interactions(512, g)

model = CatalogueRecommender(N_USERS, N_ITEMS, DIM)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
BATCH = 64


def train_epoch(epoch):
    total = 0.0
    for start in range(0, len(users), BATCH):
        u, i, j = users[start:start + BATCH], items[start:start + BATCH], negs[start:start + BATCH]
        catalogue_scores, pos_scores, neg_scores = model(u, i, j)
        softmax_loss = F.cross_entropy(catalogue_scores, i)
        bpr_loss = -F.logsigmoid(pos_scores - neg_scores).mean()
        loss = softmax_loss + 0.5 * bpr_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / (len(users) // BATCH):.4f}")


for epoch in range(3):
    train_epoch(epoch)
