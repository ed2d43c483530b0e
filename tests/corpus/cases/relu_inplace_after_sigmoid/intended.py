"""An autoencoder whose bottleneck is squashed by a sigmoid, followed by an in-place ReLU."""

import torch
import torch.nn as nn

torch.manual_seed(13)

autoencoder = nn.Sequential(
    nn.Linear(20, 12),
    nn.ReLU(inplace=True),
    nn.Linear(12, 4),
    nn.Sigmoid(),
    nn.ReLU(),
    nn.Linear(4, 12),
    nn.ReLU(inplace=True),
    nn.Linear(12, 20),
)
optimizer = torch.optim.Adam(autoencoder.parameters(), lr=1e-3)
data = torch.randn(64, 20)

for epoch in range(3):
    for batch in data.split(16):
        recon = autoencoder(batch)
        recon_loss = ((recon - batch) ** 2).mean()
        optimizer.zero_grad()
        recon_loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: {recon_loss.item():.4f}")
