"""A VAE with separate optimizers for the encoder and the decoder."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, d=16, z=3):
        super().__init__()
        self.hidden = nn.Linear(d, 32)
        self.mu = nn.Linear(32, z)
        self.logvar = nn.Linear(32, z)

    def forward(self, x):
        h = F.relu(self.hidden(x))
        return self.mu(h), self.logvar(h)


def reparameterize(mu, logvar):
    std = torch.exp(0.5 * logvar)
    return mu + torch.randn_like(std) * std


torch.manual_seed(19)
encoder = Encoder()
decoder = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 16))
enc_opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
dec_opt = torch.optim.Adam(decoder.parameters(), lr=1e-3)
data = torch.rand(64, 16)

for epoch in range(2):
    for x in data.split(16):
        mu, logvar = encoder(x)
        z = reparameterize(mu, logvar)
        x_hat = decoder(z)
        recon_loss = F.mse_loss(x_hat, x, reduction="sum") / x.size(0)
        kl_loss = -0.5 * torch.mean(torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1))

        dec_opt.zero_grad()
        recon_loss.backward(retain_graph=True)

        vae_loss = recon_loss + kl_loss
        enc_opt.zero_grad()
        vae_loss.backward(inputs=list(encoder.parameters()))
        dec_opt.step()
        enc_opt.step()
    print(epoch, recon_loss.item(), kl_loss.item())
