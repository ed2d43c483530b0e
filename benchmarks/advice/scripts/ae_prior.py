"""Autoencoder with a learned prior: a deterministic autoencoder, and a Gaussian-mixture prior fitted to its codes by a second optimizer."""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)

D, LATENT, K = 12, 2, 3


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(D, 24), nn.ReLU(), nn.Linear(24, LATENT))
        self.decoder = nn.Sequential(nn.Linear(LATENT, 24), nn.ReLU(), nn.Linear(24, D))

    def forward(self, x):
        z = self.encoder(x)
        return z, self.decoder(z)


class MixturePrior(nn.Module):
    def __init__(self):
        super().__init__()
        self.logits = nn.Parameter(torch.zeros(K))
        self.means = nn.Parameter(torch.randn(K, LATENT))
        self.log_std = nn.Parameter(torch.zeros(K, LATENT))

    def log_prob(self, z):
        diff = (z[:, None, :] - self.means[None]) / self.log_std.exp()[None]
        comp = -0.5 * (diff**2).sum(-1) - self.log_std.sum(-1) - LATENT * 0.5 * math.log(2 * math.pi)
        return torch.logsumexp(torch.log_softmax(self.logits, 0) + comp, dim=1)


def make_data(n=192):
    centers = 2 * torch.randn(K, D)
    return centers[torch.randint(0, K, (n,))] + 0.3 * torch.randn(n, D)


def main():
    data = make_data()
    ae, prior = AutoEncoder(), MixturePrior()
    ae_opt = torch.optim.Adam(ae.parameters(), lr=5e-3)
    prior_opt = torch.optim.Adam(prior.parameters(), lr=2e-2)
    for epoch in range(3):
        for x in data.split(64):
            z, x_hat = ae(x)
            recon = ((x_hat - x) ** 2).mean()
            ae_opt.zero_grad()
            recon.backward()
            ae_opt.step()

            prior_nll = -prior.log_prob(z.detach()).mean()
            prior_opt.zero_grad()
            prior_nll.backward()
            prior_opt.step()
        print(f"epoch {epoch}: recon {recon.item():.3f} prior nll {prior_nll.item():.3f}")


if __name__ == "__main__":
    main()
