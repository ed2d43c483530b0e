"""Unsupervised SimCSE: dropout noise as the positive pair, in-batch InfoNCE over cosine similarities.

Report: https://github.com/lzx1413/PytorchSSD/issues/72
The reporter's training stopped at ``loss.backward()`` with "one of the variables needed for
gradient computation has been modified by an inplace operation"; the cause was an L2Norm layer
that divided its input by its own norm in place (``x /= norm``), and the fix was
``x = x / norm``. The training setting is the writer's: a small transformer sentence encoder
whose pooled embeddings are L2-normalised in place by the same kind of helper before the
cosine-similarity matrix of the two dropout views.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, DIM, SEQ, BATCH, TEMP = 100, 32, 10, 16, 0.05


class SentenceEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(SEQ, DIM) * 0.02)
        layer = nn.TransformerEncoderLayer(DIM, 4, 64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.pooler = nn.Sequential(nn.Linear(DIM, DIM), nn.Tanh())  # MLP over [CLS] during training

    def forward(self, ids, mask):
        h = self.encoder(self.embed(ids) + self.pos, src_key_padding_mask=~mask)
        return self.pooler(h[:, 0])


def l2_normalize(x, eps=1e-8):
    norm = x.pow(2).sum(dim=-1, keepdim=True).sqrt() + eps
    return x / norm


def simcse_loss(z1, z2, temp):
    z1 = l2_normalize(z1)
    z2 = l2_normalize(z2)
    sim = z1 @ z2.t() / temp
    labels = torch.arange(z1.size(0))
    return F.cross_entropy(sim, labels)


def make_batch():
    lengths = torch.randint(4, SEQ + 1, (BATCH,))
    ids = torch.randint(1, VOCAB, (BATCH, SEQ))
    mask = torch.arange(SEQ)[None, :] < lengths[:, None]
    ids = ids.masked_fill(~mask, 0)
    ids[:, 0] = 1  # [CLS]
    return ids, mask


model = SentenceEncoder()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

model.train()
for step in range(4):
    ids, mask = make_batch()
    # the same sentences twice: the two dropout masks make the positive pair
    z = model(torch.cat([ids, ids]), torch.cat([mask, mask]))
    z1, z2 = z[:BATCH], z[BATCH:]
    loss = simcse_loss(z1, z2, TEMP)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
