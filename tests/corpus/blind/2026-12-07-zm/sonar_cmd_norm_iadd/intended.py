"""Sonar target recognition with central-moment-discrepancy (CMD) alignment between two sea trials.

Report: https://github.com/pytorch/pytorch/issues/78140 ("backward error for sum of vector
norm"). The author computed the CMD metric between two feature batches as
``cmd = (mean_x - mean_y).norm(p=2)`` and then added the higher-moment terms with
``cmd += (central_moment_x - central_moment_y).norm(p=2)``; the backward failed with "one of the
variables needed for gradient computation has been modified by an inplace operation ... output 0
of LinalgVectorNorm". The norm's backward keeps its own output, and ``+=`` writes into it.

The training setting is the writer's: a small CNN classifies active-sonar returns (complex
range-Doppler maps, real and imaginary parts as two channels) from a labelled sea trial, and CMD
pulls the encoder's features for an unlabelled second trial (other water, other array) towards
the labelled trial's. The encoder and the classifier have one optimizer each.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CLASSES = 4
RANGE_BINS, DOPPLER_BINS = 16, 12
BATCH = 24


class ComplexRDEncoder(nn.Module):
    """Encodes a complex range-Doppler map given as (real, imag) channels plus its log-magnitude."""

    def __init__(self, feat_dim=32):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d((2, 2))
        self.proj = nn.Linear(32 * 4, feat_dim)

    def forward(self, rd):
        mag = torch.log1p(torch.sqrt(rd[:, 0] ** 2 + rd[:, 1] ** 2 + 1e-8)).unsqueeze(1)
        x = torch.cat([rd, mag], dim=1)
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.pool(x).flatten(1)
        return torch.tanh(self.proj(x))


class TargetClassifier(nn.Module):
    def __init__(self, feat_dim=32):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(feat_dim, 32), nn.ReLU(), nn.Linear(32, N_CLASSES))

    def forward(self, f):
        return self.fc(f)


def central_moment_discrepancy(x, y, n_moments=3):
    """CMD (Zellinger et al.): distance of the means plus distances of central moments 2..K."""
    mean_x, mean_y = x.mean(dim=0), y.mean(dim=0)
    offsets_x, offsets_y = x - mean_x, y - mean_y
    cmd = (mean_x - mean_y).norm(p=2)
    for k in range(2, n_moments + 1):
        moment_x = offsets_x.pow(k).mean(dim=0)
        moment_y = offsets_y.pow(k).mean(dim=0)
        cmd = cmd + (moment_x - moment_y).norm(p=2)
    return cmd


def synth_trial(n, shift):
    """Synthetic returns: a class-dependent Doppler line plus reverberation; `shift` changes the water."""
    labels = torch.randint(0, N_CLASSES, (n,))
    rd = 0.3 * torch.randn(n, 2, RANGE_BINS, DOPPLER_BINS)
    for i in range(n):
        col = 2 + 2 * int(labels[i])
        rd[i, 0, 4:12, col] += 1.5
        rd[i, 1, 4:12, col] += 0.5
    rd = rd * (1.0 + shift) + shift * torch.randn(n, 2, 1, DOPPLER_BINS)
    return rd, labels


encoder = ComplexRDEncoder()
classifier = TargetClassifier()
opt_enc = torch.optim.Adam(encoder.parameters(), lr=1e-3)
opt_cls = torch.optim.Adam(classifier.parameters(), lr=1e-3)

for step in range(4):
    src_rd, src_y = synth_trial(BATCH, shift=0.0)
    tgt_rd, _ = synth_trial(BATCH, shift=0.4)

    f_src = encoder(src_rd)
    f_tgt = encoder(tgt_rd)
    logits = classifier(f_src)

    cls_loss = F.cross_entropy(logits, src_y)
    align_loss = central_moment_discrepancy(f_src, f_tgt)

    opt_enc.zero_grad()
    opt_cls.zero_grad()
    (cls_loss + 0.5 * align_loss).backward()  # CMD weight 0.5
    opt_enc.step()
    opt_cls.step()
    print(f"step {step}: cls {cls_loss.item():.4f} cmd {align_loss.item():.4f}")
