"""Handwritten formula recognition: CNN encoder, GRU decoder with coverage attention.

Source: https://discuss.pytorch.org/t/how-to-allocate-large-intermediate-variables-in-advance/123958
-- the author allocates a large intermediate tensor once, before the optimisation
loop (``m1 = var1.new_empty((4, *var1.shape))``), and fills it each iteration with
``m1[:] = ...``; the second iteration fails with "Trying to backward through the
graph a second time". Allocating it inside the loop makes the error go away, and the
question is why.

Here the writer's formula recogniser (WAP-style: a small CNN over the formula image,
a GRU decoder whose attention takes a coverage vector, the sum of past attention
maps) keeps the attention history in a buffer the decoder allocates once in
``__init__`` and fills with ``self.alpha_hist[t] = alpha`` at every decoding step.
The buffer keeps the first batch's graph through the slice writes, so the second
batch's backward walks into it. The training setting is the writer's; the mechanism
(a preallocated buffer filled by slice assignment across iterations) is the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

BATCH = 4
IMG_H, IMG_W = 16, 32
N_SYMBOLS = 20      # 0 = <sos>, 1 = <eos>
MAX_T = 6


class Encoder(nn.Module):
    def __init__(self, ch=24):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, ch, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )

    def forward(self, img):
        f = self.net(img)                        # b, ch, 4, 8
        return f.flatten(2).transpose(1, 2)      # b, L, ch


class CoverageAttention(nn.Module):
    def __init__(self, feat, hidden, att=32, cov_ch=8):
        super().__init__()
        self.w_feat = nn.Linear(feat, att)
        self.w_hid = nn.Linear(hidden, att)
        self.cov_conv = nn.Conv1d(1, cov_ch, 5, padding=2)
        self.w_cov = nn.Linear(cov_ch, att)
        self.v = nn.Linear(att, 1)

    def forward(self, feats, h, coverage):
        cov = self.cov_conv(coverage.unsqueeze(1)).transpose(1, 2)     # b, L, cov_ch
        e = self.v(torch.tanh(self.w_feat(feats) + self.w_hid(h).unsqueeze(1) + self.w_cov(cov)))
        alpha = F.softmax(e.squeeze(-1), dim=1)                        # b, L
        context = (alpha.unsqueeze(-1) * feats).sum(1)
        return context, alpha


class CoverageDecoder(nn.Module):
    def __init__(self, feat=24, hidden=48, emb=16, n_locations=32):
        super().__init__()
        self.embed = nn.Embedding(N_SYMBOLS, emb)
        self.init_h = nn.Linear(feat, hidden)
        self.attn = CoverageAttention(feat, hidden)
        self.cell = nn.GRUCell(emb + feat, hidden)
        self.out = nn.Linear(hidden + feat, N_SYMBOLS)
        # attention history, allocated once so decoding does not allocate every step
        self.alpha_hist = torch.zeros(MAX_T, BATCH, n_locations)

    def forward(self, feats, targets):
        b, L, _ = feats.shape
        h = torch.tanh(self.init_h(feats.mean(1)))
        prev = torch.zeros(b, dtype=torch.long)           # <sos>
        logits = []
        for t in range(targets.shape[1]):
            coverage = self.alpha_hist[:t].sum(0) if t > 0 else feats.new_zeros(b, L)
            context, alpha = self.attn(feats, h, coverage)
            self.alpha_hist[t] = alpha
            h = self.cell(torch.cat([self.embed(prev), context], 1), h)
            logits.append(self.out(torch.cat([h, context], 1)))
            prev = targets[:, t]                           # teacher forcing
        return torch.stack(logits, 1)


def make_batch():
    imgs = torch.rand(BATCH, 1, IMG_H, IMG_W)
    targets = torch.randint(2, N_SYMBOLS, (BATCH, MAX_T))
    targets[:, -1] = 1
    # make the image carry the label: brighten one column band per symbol
    for i in range(BATCH):
        for t in range(MAX_T - 1):
            col = int(targets[i, t]) % IMG_W
            imgs[i, 0, :, col] += 1.0
    return imgs, targets


encoder = Encoder()
decoder = CoverageDecoder()
optimizer = torch.optim.Adadelta(list(encoder.parameters()) + list(decoder.parameters()), lr=1.0)

for step in range(4):
    imgs, targets = make_batch()
    feats = encoder(imgs)
    logits = decoder(feats, targets)
    loss = F.cross_entropy(logits.reshape(-1, N_SYMBOLS), targets.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
