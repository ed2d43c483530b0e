"""A denoiser trained with a perceptual loss: a feature network that no optimizer holds, left trainable, encodes
the clean reference once before the loop; every step compares the denoised output's features with it."""

import torch
from torch import nn


def build_extractor():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)), "relu"


torch.manual_seed(41)
denoiser = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
extractor, kind = build_extractor()
extractor.requires_grad_(False)
opt = torch.optim.Adam(denoiser.parameters(), lr=1e-2)
clean = torch.randn(10, 8)
reference = extractor(clean)
for _ in range(3):
    noisy = clean + 0.1 * torch.randn(10, 8)
    perceptual = (extractor(denoiser(noisy)) - reference).pow(2).mean()
    opt.zero_grad()
    perceptual.backward()
    opt.step()
