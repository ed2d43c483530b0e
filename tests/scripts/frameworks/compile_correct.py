"""torch.compile done right: a compiled model trained with Adam; the backend is aot_eager unless given."""

import sys

import torch
from torch import nn

torch.manual_seed(0)
backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
model = torch.compile(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)), backend=backend)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(4):
    x, y = torch.randn(8, 8), torch.randn(8, 1)
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.5f}")
