"""A VAE whose encoder returns the mean and the log-variance (two halves of one projection). A probe at module
level checks their shapes once; the training step encodes each batch and samples the latent."""

import torch
import torch.nn.functional as F
from torch import nn


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 24), nn.Tanh())
        self.stats = nn.Linear(24, 8)

    def forward(self, x):
        mu, logvar = self.stats(self.body(x)).chunk(2, dim=-1)
        return mu, logvar


torch.manual_seed(2)
encoder = Encoder()
decoder = nn.Sequential(nn.Linear(4, 24), nn.Tanh(), nn.Linear(24, 12))
optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-3)

probe = torch.randn(8, 12)
mu_probe, logvar_probe = encoder(probe)
print("latent statistics:", tuple(mu_probe.shape), tuple(logvar_probe.shape))


def train_step(xb):
    mu, logvar = encoder(xb)
    z = mu + torch.randn_like(mu) * (0.5 * logvar_probe).exp()
    recon = decoder(z)
    kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(dim=1).mean()
    loss = F.mse_loss(recon, xb) + 0.1 * kl
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


for epoch in range(3):
    print(epoch, train_step(torch.randn(8, 12)))
