"""A VAE whose KL term lost its sum: the loss has one number per element, and the log reads kl.item()."""

import torch
from torch import nn

torch.manual_seed(47)
enc, dec = nn.Linear(6, 4), nn.Linear(2, 6)
opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-2)
x = torch.randn(16, 6)


def vae_loss(x, x_hat, mu, logvar):
    recon = nn.functional.mse_loss(x_hat, x, reduction="sum") / x.shape[0]
    kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()) / x.shape[0]
    return recon, kl


for _ in range(3):
    mu, logvar = enc(x).chunk(2, dim=1)
    z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
    recon, kl = vae_loss(x, dec(z), mu, logvar)
    loss = recon + kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"recon {recon.item():.3f} kl {kl.item():.3f}")
