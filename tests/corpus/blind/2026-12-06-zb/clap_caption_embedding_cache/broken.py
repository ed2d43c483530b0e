"""Audio-language contrastive learning: CLAP-style towers with a cache of caption embeddings.

Source: https://github.com/lab-cosmo/torch-pme/issues/62
In the report, a calculator caches a quantity it derives from its input (the cell)
and reuses it when the next call passes an unchanged input; the cached tensor still
carries the graph of the first call, so the second ``backward`` fails with "Trying to
backward through the graph a second time". The training setting is the writer's: a
CLAP-style model (log-mel CNN audio tower, token-embedding + attention-pooling text
tower, projections to a shared space, learned temperature, symmetric InfoNCE) on a
dataset whose captions come from a few templates; the text tower memoises the
embedding of each caption it has already encoded, keyed on its token ids, to save the
text forward for repeated captions.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, D_TXT, D_EMB, N_MELS, N_FRAMES, CAP_LEN, BATCH = 50, 48, 32, 32, 40, 6, 8
CAPTIONS = torch.randint(1, VOCAB, (6, CAP_LEN))      # six templated captions


class AudioTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2))
        self.proj = nn.Linear(32, D_EMB)

    def forward(self, mel):
        h = self.conv(mel.unsqueeze(1))                  # (B, 32, F', T')
        h = h.mean(2).amax(-1)                           # mean over freq, max over time
        return self.proj(h)


class TextTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_TXT)
        self.mix = nn.Sequential(nn.Linear(D_TXT, D_TXT), nn.GELU(), nn.Linear(D_TXT, D_TXT))
        self.attn_pool = nn.Linear(D_TXT, 1)
        self.proj = nn.Linear(D_TXT, D_EMB)
        self._cache = {}

    def encode_one(self, ids):
        key = tuple(ids.tolist())
        if key in self._cache:
            return self._cache[key]
        h = self.tok(ids)
        h = h + self.mix(h)
        w = torch.softmax(self.attn_pool(h).squeeze(-1), 0)
        emb = self.proj((w.unsqueeze(-1) * h).sum(0))
        self._cache[key] = emb
        return emb

    def forward(self, captions):
        return torch.stack([self.encode_one(c) for c in captions])


class CLAP(nn.Module):
    def __init__(self):
        super().__init__()
        self.audio = AudioTower()
        self.text = TextTower()
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, mel, captions):
        a = F.normalize(self.audio(mel), dim=-1)
        t = F.normalize(self.text(captions), dim=-1)
        return a, t


def clap_loss(a, t, logit_scale):
    logits = logit_scale.exp() * a @ t.t()
    labels = torch.arange(a.shape[0])
    return 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels))


def make_batch():
    idx = torch.randint(0, len(CAPTIONS), (BATCH,))
    captions = CAPTIONS[idx]
    mel = torch.randn(BATCH, N_MELS, N_FRAMES) + idx.float().view(-1, 1, 1) * 0.3
    return mel, captions


model = CLAP()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

for step in range(1, 7):
    mel, captions = make_batch()
    a, t = model(mel, captions)
    loss = clap_loss(a, t, model.logit_scale)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        model.logit_scale.clamp_(0, math.log(100))
    if step % 3 == 0:
        print(f"step {step}: loss {loss.item():.4f} temp {1 / model.logit_scale.exp().item():.3f}")
