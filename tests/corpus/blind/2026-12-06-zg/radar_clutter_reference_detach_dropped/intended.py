"""Radar target recognition from raw I/Q pulses with a learned complex-valued Doppler front end.

Report: https://github.com/LiJunnan1992/MLNT/issues/8 ("Can't detach views in-place."). In
MLNT's training step a tensor computed once per mini-batch is reused by several inner passes
(one per synthetic noise type), each with its own backward. Its in-place ``detach_()`` raised
"Can't detach views in-place. Use detach() instead" on newer PyTorch; after switching to
``detach()`` the first inner pass worked and the second failed with "Trying to backward through
the graph a second time". The maintainer's answer: ``tensor = tensor.detach()`` (``detach()``
returns a new tensor; called alone it changes nothing). Here the training setting is the
writer's: a complex linear front end (a learned Doppler filter bank applied across pulses) turns
I/Q data into range-Doppler magnitude maps, a near-range clutter reference is cut from the clean
map once per batch and meant as a constant normaliser, and several augmented passes (random
phase rotation, small Doppler shift) each backpropagate before one step of two optimizers.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

PULSES, RANGES, CLASSES, GUARD = 16, 20, 4, 3


def synthetic_iq(n):
    """Targets with class-specific Doppler (radial velocity) and micro-Doppler spread."""
    labels = torch.randint(0, CLASSES, (n,))
    p = torch.arange(PULSES).float()
    doppler = (labels.float() - 1.5) * 0.18 + 0.02 * torch.randn(n)
    spread = 0.05 * labels.float()
    rng = torch.randint(GUARD + 2, RANGES - 2, (n,))
    phase = 2 * math.pi * (doppler[:, None] * p[None] + spread[:, None] * torch.sin(0.7 * p[None]))
    echo = torch.polar(torch.ones(n, PULSES), phase)
    iq = (torch.randn(n, PULSES, RANGES) + 1j * torch.randn(n, PULSES, RANGES)) * 0.2
    iq[:, :, :GUARD] += 1.5  # strong static near-range clutter
    iq[torch.arange(n), :, rng] += echo
    return iq.to(torch.complex64), labels


class ComplexDopplerFrontEnd(nn.Module):
    """Learned complex filter bank across pulses, initialised as a DFT."""

    def __init__(self, bins=PULSES):
        super().__init__()
        k = torch.arange(bins).float()[:, None] * torch.arange(PULSES).float()[None]
        self.w_re = nn.Parameter(torch.cos(2 * math.pi * k / PULSES) / math.sqrt(PULSES))
        self.w_im = nn.Parameter(-torch.sin(2 * math.pi * k / PULSES) / math.sqrt(PULSES))

    def forward(self, iq):  # iq: (B, PULSES, RANGES) complex
        w = torch.complex(self.w_re, self.w_im)
        rd = torch.einsum("dp,bpr->bdr", w, iq)
        return torch.log1p(rd.abs()).unsqueeze(1)  # (B, 1, DOPPLER, RANGES)


class RDClassifier(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, ch, 3, padding=1), nn.ReLU(),
            nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU(),
            nn.AdaptiveMaxPool2d((4, 1)), nn.Flatten(),
        )
        self.fc = nn.Linear(4 * ch, CLASSES)

    def forward(self, rd):
        return self.fc(self.conv(rd))


def augment(iq):
    b = iq.shape[0]
    rot = torch.polar(torch.ones(b, 1, 1), 2 * math.pi * torch.rand(b, 1, 1))
    shift = 0.03 * torch.randn(b, 1, 1)
    ramp = torch.polar(torch.ones(1, PULSES, 1), 2 * math.pi * shift * torch.arange(PULSES).view(1, -1, 1))
    return iq * rot * ramp


iq_all, labels_all = synthetic_iq(128)
front_end = ComplexDopplerFrontEnd()
classifier = RDClassifier()
front_opt = torch.optim.Adam(front_end.parameters(), lr=1e-3)
cls_opt = torch.optim.Adam(classifier.parameters(), lr=2e-3)
N_AUG = 3

for epoch in range(4):
    perm = torch.randperm(iq_all.shape[0])
    for start in range(0, iq_all.shape[0], 32):
        idx = perm[start:start + 32]
        iq, y = iq_all[idx], labels_all[idx]
        front_opt.zero_grad()
        cls_opt.zero_grad()
        # near-range clutter level of the clean map, a constant normaliser for the augmented passes
        clutter_ref = front_end(iq)[..., :GUARD]
        clutter_ref = clutter_ref.detach()
        level = clutter_ref.mean(dim=(2, 3), keepdim=True)
        for k in range(N_AUG):
            rd = front_end(augment(iq)) - level
            loss = F.cross_entropy(classifier(rd), y) / N_AUG
            loss.backward()
        front_opt.step()
        cls_opt.step()
    print(f"epoch {epoch} loss {loss.item() * N_AUG:.4f}")
