"""Isolated sign recognition from pose keypoint sequences: an LSTM over frames, a transformer on top.

Reduced from https://github.com/lucidrains/x-transformers/pull/55 . The author stacked
x-transformers' ``ContinuousTransformerWrapper`` on top of an ``nn.LSTM``. Without ``dim_in`` the
wrapper's ``project_in`` is ``nn.Identity()``, so ``x = self.project_in(x)`` is the LSTM's own output
tensor, and the next line, ``x += self.pos_emb(x)``, added the positional embedding into it in place.
The RNN's backward needs its output, and ``loss.backward()`` failed with "one of the variables needed
for gradient computation has been modified by an inplace operation: [torch.cuda.FloatTensor
[10, 20, 64]], which is output 0 of CudnnRnnBackward, is at version 1; expected version 0". The PR
replaced the in-place additions by ``x = x + self.pos_emb(x)``.

The training setting is the writer's: sign glosses are classified from 2-D body and hand keypoints;
the keypoints are centred and scaled per frame, embedded, run through an LSTM and then through a small
continuous-input transformer wrapper written the way x-transformers writes it.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_JOINTS, NUM_GLOSSES, FRAMES = 27, 10, 24
NECK, L_SHOULDER, R_SHOULDER = 1, 2, 5


def synth_signs(n):
    """Each gloss is a template trajectory of the wrists and fingers over the sign, plus signer noise."""
    labels = torch.randint(0, NUM_GLOSSES, (n,))
    t = torch.linspace(0, 1, FRAMES)[None, :, None]
    phase = (labels.float() / NUM_GLOSSES * 2 * math.pi)[:, None, None]
    joints = torch.arange(NUM_JOINTS).float()[None, None, :]
    x = torch.sin(2 * math.pi * t + phase + 0.3 * joints) * (1 + labels[:, None, None] % 3)
    y = torch.cos(math.pi * t * (1 + labels[:, None, None] % 4) + 0.2 * joints)
    kp = torch.stack([x, y], -1) + 0.1 * torch.randn(n, FRAMES, NUM_JOINTS, 2)
    kp = kp * (0.5 + torch.rand(n, 1, 1, 1)) + torch.randn(n, 1, 1, 2)  # signer size and position
    return kp, labels


def normalise_pose(kp):
    """Centre on the neck and divide by the shoulder width, frame by frame."""
    centre = kp[:, :, NECK:NECK + 1]
    width = (kp[:, :, L_SHOULDER] - kp[:, :, R_SHOULDER]).norm(dim=-1)[..., None, None].clamp_min(1e-3)
    return ((kp - centre) / width).flatten(2)


class AbsolutePositionalEmbedding(nn.Module):
    def __init__(self, dim, max_len):
        super().__init__()
        self.scale = dim ** -0.5
        self.emb = nn.Embedding(max_len, dim)

    def forward(self, x):
        return self.emb(torch.arange(x.shape[1])) * self.scale


class ContinuousTransformerWrapper(nn.Module):
    """Continuous inputs in, embeddings out (same layout as x-transformers' wrapper)."""

    def __init__(self, dim, depth, heads, max_len, dim_in=None, emb_dropout=0.0):
        super().__init__()
        self.project_in = nn.Linear(dim_in, dim) if dim_in is not None else nn.Identity()
        self.pos_emb = AbsolutePositionalEmbedding(dim, max_len)
        self.emb_dropout = nn.Dropout(emb_dropout)
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.attn_layers = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, mask=None):
        x = self.project_in(x)
        x = x + self.pos_emb(x)
        x = self.emb_dropout(x)
        x = self.attn_layers(x, src_key_padding_mask=mask)
        return self.norm(x)


class SignRecognizer(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.frame_embed = nn.Sequential(nn.Linear(NUM_JOINTS * 2, dim), nn.GELU(), nn.Linear(dim, dim))
        self.rnn = nn.LSTM(dim, dim, batch_first=True)
        self.transformer = ContinuousTransformerWrapper(dim, depth=2, heads=4, max_len=FRAMES)
        self.classifier = nn.Linear(dim, NUM_GLOSSES)

    def forward(self, kp):
        h = self.frame_embed(normalise_pose(kp))
        h, _ = self.rnn(h)
        h = self.transformer(h)
        return self.classifier(h.mean(1))


model = SignRecognizer()
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)
val_kp, val_labels = synth_signs(64)

for step in range(40):
    kp, labels = synth_signs(16)
    logits = model(kp)
    loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if step % 20 == 0:
        with torch.no_grad():
            acc = (model(val_kp).argmax(-1) == val_labels).float().mean()
        print(f"step {step}: loss {loss.item():.3f} val acc {acc:.2f}")
