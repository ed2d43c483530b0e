"""Sparse-coding denoiser: the encoder's codes are decoded onto a fixed dictionary by a numpy helper kept from an
earlier prototype, and the reconstruction loss is taken on what it returns."""

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(4)
rng = np.random.default_rng(4)
DICTIONARY = rng.standard_normal((16, 32)) / 4.0


def decode_codes(codes):
    return torch.tanh(codes @ torch.as_tensor(DICTIONARY, dtype=codes.dtype)) * 2.0


encoder = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))
optimiser = torch.optim.Adam(encoder.parameters(), lr=1e-3)
clean = torch.randn(128, 32)
for it in range(3):
    noisy = clean + 0.1 * torch.randn_like(clean)
    codes = encoder(noisy)
    recon = decode_codes(codes)
    rec_loss = ((recon - clean) ** 2).mean()
    optimiser.zero_grad()
    rec_loss.backward()
    optimiser.step()
    print(f"{rec_loss.item():.5f}")
