"""Probabilistic autoencoder: an autoencoder, then a normalizing flow fitted to its latent codes.

Reduced from https://github.com/davidnabergoj/torchflows/issues/8. The author trains an
autoencoder on the data, then fits a normalizing flow (torchflows' `Flow.fit`: a
DataLoader over the training tensor, AdamW, mini-batch negative log-likelihood) to the
autoencoder's latent space, to sample new latents and decode them. Here the flow is a
small RealNVP written out, `fit` follows torchflows' loop with its optimizer made by the
trainer, and random vectors stand in for the data.
"""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

DATA_DIM, LATENT_DIM = 20, 4


class Autoencoder(nn.Module):
    def __init__(self, data_dim, latent_dim, hidden=32):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(data_dim, hidden), nn.ReLU(), nn.Linear(hidden, latent_dim))
        self.decoder = nn.Sequential(nn.Linear(latent_dim, hidden), nn.ReLU(), nn.Linear(hidden, data_dim))

    def forward(self, x):
        return self.decoder(self.encoder(x))


class AffineCoupling(nn.Module):
    def __init__(self, dim, mask, hidden=16):
        super().__init__()
        self.register_buffer('mask', mask)
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, 2 * dim))

    def forward(self, x):
        x_masked = x * self.mask
        log_scale, shift = self.net(x_masked).chunk(2, dim=-1)
        log_scale = torch.tanh(log_scale) * (1 - self.mask)
        shift = shift * (1 - self.mask)
        z = x_masked + (1 - self.mask) * (x * torch.exp(log_scale) + shift)
        return z, log_scale.sum(dim=-1)


class Flow(nn.Module):
    def __init__(self, event_size, n_layers=4):
        super().__init__()
        self.event_size = event_size
        masks = [torch.arange(event_size) % 2 == i % 2 for i in range(n_layers)]
        self.layers = nn.ModuleList([AffineCoupling(event_size, m.float()) for m in masks])
        self.register_buffer('loc', torch.zeros(event_size))
        self.register_buffer('covariance_matrix', torch.eye(event_size))

    @property
    def base(self):
        return torch.distributions.MultivariateNormal(loc=self.loc, covariance_matrix=self.covariance_matrix)

    def log_prob(self, x):
        log_det = torch.zeros(x.shape[0])
        z = x
        for layer in self.layers:
            z, ld = layer(z)
            log_det = log_det + ld
        return self.base.log_prob(z) + log_det

    def regularization(self):
        return 0.0

    def fit(self, x_train, optimizer, n_epochs=2, batch_size=8, shuffle=True):
        self.train()
        train_loader = DataLoader(TensorDataset(x_train), batch_size=batch_size, shuffle=shuffle)

        def compute_batch_loss(batch_, reduction=torch.mean):
            batch_x = batch_[0]
            batch_log_prob = self.log_prob(batch_x)
            return -reduction(batch_log_prob) / self.event_size

        for epoch in range(n_epochs):
            for train_batch in train_loader:
                optimizer.zero_grad()
                train_loss = compute_batch_loss(train_batch, reduction=torch.mean)
                train_loss += self.regularization()
                train_loss.backward()
                optimizer.step()
        self.eval()


class PAETrainer:
    def __init__(self, data_dim, latent_dim):
        self.autoencoder = Autoencoder(data_dim, latent_dim)
        self.flow = Flow(latent_dim)
        self.ae_optimizer = torch.optim.Adam(self.autoencoder.parameters(), lr=1e-3)
        self.flow_optimizer = torch.optim.AdamW(self.flow.parameters(), lr=5e-3)

    def train_autoencoder(self, x_train, n_epochs=1, batch_size=16):
        loader = DataLoader(TensorDataset(x_train), batch_size=batch_size, shuffle=True)
        for epoch in range(n_epochs):
            for (batch_x,) in loader:
                self.ae_optimizer.zero_grad()
                recon_loss = ((self.autoencoder(batch_x) - batch_x) ** 2).mean()
                recon_loss.backward()
                self.ae_optimizer.step()

    def fit_latent_prior(self, x_train):
        latents = self.autoencoder.encoder(x_train).detach()
        self.flow.fit(latents, self.flow_optimizer)

    def sample(self, n):
        with torch.no_grad():
            z = self.flow.base.sample((n,))
            return self.autoencoder.decoder(z)


if __name__ == '__main__':
    x_train = torch.randn(64, DATA_DIM)
    pae = PAETrainer(DATA_DIM, LATENT_DIM)
    pae.train_autoencoder(x_train)
    pae.fit_latent_prior(x_train)
    print(pae.sample(4).shape)
