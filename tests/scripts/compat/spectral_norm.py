"""Spectral norm (torch.nn.utils.parametrizations.spectral_norm): power iteration writes its vectors in place."""

import torch
from torch.nn.utils.parametrizations import spectral_norm

torch.manual_seed(0)
layer = spectral_norm(torch.nn.Linear(5, 4))
opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
for step in range(3):
    loss = layer(torch.randn(6, 5)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 4), round(torch.linalg.matrix_norm(layer.weight, 2).item(), 3))
