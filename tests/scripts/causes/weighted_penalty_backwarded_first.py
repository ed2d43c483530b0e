"""An autoencoder whose code is kept small by an activation penalty, backwarded on its own (scaled by a
weight that warms up) before the reconstruction loss; both go through the encoder's graph, which the
penalty's backward frees.
"""

import torch
from torch import nn

torch.manual_seed(7)
encoder = nn.Sequential(nn.Linear(10, 16), nn.GELU(), nn.Linear(16, 4))
decoder = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.Linear(16, 10))
params = [*encoder.parameters(), *decoder.parameters()]
adam = torch.optim.Adam(params, lr=3e-3)
data = torch.randn(64, 10)

for it in range(4):
    warm = min(1.0, (it + 1) / 3)
    code = encoder(data)
    sparsity = code.abs().mean()
    recon = nn.functional.mse_loss(decoder(code), data)
    adam.zero_grad()
    (warm * 0.1 * sparsity).backward()
    recon.backward()
    adam.step()
    print(it, round(recon.item(), 5))
