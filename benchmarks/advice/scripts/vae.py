"""VAE: a variational autoencoder on synthetic 16-d data lying near a 2-d manifold; the loss helper returns both terms."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def make_data(n=128):
    t = torch.rand(n, 2) * 2 - 1
    basis = torch.randn(2, 16)
    return torch.sigmoid(3 * t @ basis) + 0.02 * torch.randn(n, 16)


class Encoder(nn.Module):
    def __init__(self, d_in=16, d_hidden=32, d_latent=2):
        super().__init__()
        self.hidden = nn.Linear(d_in, d_hidden)
        self.mu = nn.Linear(d_hidden, d_latent)
        self.logvar = nn.Linear(d_hidden, d_latent)

    def forward(self, x):
        h = F.softplus(self.hidden(x))
        return self.mu(h), self.logvar(h)


class Decoder(nn.Module):
    def __init__(self, d_latent=2, d_hidden=32, d_out=16):
        super().__init__()
        self.hidden = nn.Linear(d_latent, d_hidden)
        self.out = nn.Linear(d_hidden, d_out)

    def forward(self, z):
        h = torch.tanh(self.hidden(z))
        return torch.sigmoid(self.out(h))


def reparameterize(mu, logvar):
    std = torch.exp(0.5 * logvar)
    eps = torch.randn_like(std)
    return mu + eps * std


def vae_loss(x, x_hat, mu, logvar, beta=0.5):
    recon = F.binary_cross_entropy(x_hat, x.clamp(0, 1), reduction="sum") / x.shape[0]
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.shape[0]
    return recon, beta * kl


def main():
    data = make_data()
    encoder, decoder = Encoder(), Decoder()
    params = list(encoder.parameters()) + list(decoder.parameters())
    optimizer = torch.optim.Adam(params, lr=1e-2)
    for epoch in range(3):
        for x in data.split(32):
            mu, logvar = encoder(x)
            z = reparameterize(mu, logvar)
            x_hat = decoder(z)
            recon, kl = vae_loss(x, x_hat, mu, logvar)
            loss = recon + kl
            optimizer.zero_grad(set_to_none=False)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: recon {recon.item():.3f} kl {kl.item():.3f}")


if __name__ == "__main__":
    main()
