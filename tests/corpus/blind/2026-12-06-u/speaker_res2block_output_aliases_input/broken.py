"""ECAPA-style speaker embedding network (SE-Res2 blocks, attentive statistics pooling) trained with
an additive angular margin (AAM) softmax over the training speakers.

Report: https://github.com/Jee-King/TSAN/issues/3 (training stops with "one of the variables needed
for gradient computation has been modified by an inplace operation"; the fix given is in
``Train/model/tsan.py`` line 103: ``out = x`` --> ``out = x.clone()``: the block names its input
``out`` and writes its processed quadrants into ``out[...]`` slice by slice, which writes into ``x``,
whose slices other layers had saved). The report is a super-resolution network; the training setting
is the writer's: the author's Res2Net block writes each processed channel group back into ``out = x``
the same way.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_SPEAKERS, UTTS_PER_SPK = 12, 8
N_MELS, FRAMES = 20, 40
CHANNELS, SCALE, EMB_DIM = 32, 4, 24
BATCH = 24


def make_corpus():
    voice = torch.randn(N_SPEAKERS, N_MELS, 1) * 1.5
    feats = voice.repeat_interleave(UTTS_PER_SPK, 0) + torch.randn(N_SPEAKERS * UTTS_PER_SPK, N_MELS, FRAMES)
    labels = torch.arange(N_SPEAKERS).repeat_interleave(UTTS_PER_SPK)
    return feats, labels


class Res2Conv(nn.Module):
    """Res2Net hierarchy: group i sees its own channels plus group i-1's output."""

    def __init__(self, channels, scale, dilation):
        super().__init__()
        self.width = channels // scale
        self.convs = nn.ModuleList(
            nn.Conv1d(self.width, self.width, 3, padding=dilation, dilation=dilation) for _ in range(scale - 1)
        )
        self.bns = nn.ModuleList(nn.BatchNorm1d(self.width) for _ in range(scale - 1))

    def forward(self, x):
        groups = [x[:, j * self.width:(j + 1) * self.width] for j in range(x.size(1) // self.width)]
        out = x
        y = None
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns), start=1):
            sp = groups[i] if y is None else groups[i] + y
            y = F.relu(bn(conv(sp)))
            out[:, i * self.width:(i + 1) * self.width] = y
        return out


class SERes2Block(nn.Module):
    def __init__(self, channels, scale, dilation):
        super().__init__()
        self.pre = nn.Sequential(nn.Conv1d(channels, channels, 1), nn.ReLU(), nn.BatchNorm1d(channels))
        self.res2 = Res2Conv(channels, scale, dilation)
        self.post = nn.Sequential(nn.Conv1d(channels, channels, 1), nn.ReLU(), nn.BatchNorm1d(channels))
        self.se = nn.Sequential(nn.Linear(channels, channels // 4), nn.ReLU(), nn.Linear(channels // 4, channels))

    def forward(self, x):
        h = self.post(self.res2(self.pre(x)))
        gate = torch.sigmoid(self.se(h.mean(2))).unsqueeze(2)
        return x + h * gate


class AttentiveStatsPool(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.att = nn.Sequential(nn.Conv1d(channels, 16, 1), nn.Tanh(), nn.Conv1d(16, channels, 1))

    def forward(self, x):
        w = torch.softmax(self.att(x), dim=2)
        mu = (x * w).sum(2)
        sd = ((x ** 2 * w).sum(2) - mu ** 2).clamp(min=1e-5).sqrt()
        return torch.cat([mu, sd], 1)


class SpeakerNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv1d(N_MELS, CHANNELS, 5, padding=2), nn.ReLU(), nn.BatchNorm1d(CHANNELS))
        self.blocks = nn.Sequential(*(SERes2Block(CHANNELS, SCALE, d) for d in (2, 3)))
        self.pool = AttentiveStatsPool(CHANNELS)
        self.fc = nn.Linear(2 * CHANNELS, EMB_DIM)

    def forward(self, mels):
        return self.fc(self.pool(self.blocks(self.stem(mels))))


class AAMSoftmax(nn.Module):
    def __init__(self, emb_dim, n_classes, margin=0.2, scale=30.0):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_classes, emb_dim) * 0.1)
        self.cos_m, self.sin_m = math.cos(margin), math.sin(margin)
        self.th, self.mm = math.cos(math.pi - margin), math.sin(math.pi - margin) * margin
        self.scale = scale

    def forward(self, emb, labels):
        cosine = F.linear(F.normalize(emb), F.normalize(self.weight))
        sine = (1.0 - cosine.pow(2)).clamp(0, 1).sqrt()
        phi = cosine * self.cos_m - sine * self.sin_m
        phi = torch.where(cosine - self.th > 0, phi, cosine - self.mm)
        one_hot = F.one_hot(labels, cosine.size(1)).float()
        logits = self.scale * (one_hot * phi + (1.0 - one_hot) * cosine)
        return F.cross_entropy(logits, labels)


def train(steps=10):
    feats, labels = make_corpus()
    model = SpeakerNet()
    aam = AAMSoftmax(EMB_DIM, N_SPEAKERS)
    optimizer = torch.optim.Adam(list(model.parameters()) + list(aam.parameters()), lr=2e-3, weight_decay=2e-5)
    for step in range(steps):
        idx = torch.randperm(feats.size(0))[:BATCH]
        start = torch.randint(0, 9, (1,)).item()
        chunk = feats[idx, :, start:start + FRAMES - 8]
        chunk = chunk - chunk.mean(2, keepdim=True)  # cepstral mean normalisation
        loss = aam(model(chunk), labels[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 5 == 0:
            print(f"step {step} aam loss {loss.item():.3f}")


if __name__ == "__main__":
    train()
