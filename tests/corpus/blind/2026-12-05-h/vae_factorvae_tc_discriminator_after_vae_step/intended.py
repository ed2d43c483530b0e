"""FactorVAE: a VAE with a total-correlation discriminator on its latent codes.

Reduced from https://github.com/1Konny/FactorVAE/issues/15: the author trains FactorVAE
(Kim & Mnih, "Disentangling by Factorising") with the repository's ``Solver``: each iteration
takes two batches; the first trains the VAE on reconstruction + KL + gamma * the discriminator's
TC estimate of its latent ``z``, the second gives latents whose dimensions are permuted across
the batch, and the discriminator learns to tell ``z`` (label 0) from permuted codes (label 1).
Two Adam optimizers, one for the VAE and one for the discriminator. Synthetic 16x16 binary
images stand in for dSprites.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def recon_loss(x, x_recon):
    n = x.size(0)
    return F.binary_cross_entropy_with_logits(x_recon, x, reduction="sum").div(n)


def kl_divergence(mu, logvar):
    return -0.5 * (1 + logvar - mu**2 - logvar.exp()).sum(1).mean()


def permute_dims(z):
    b, _ = z.size()
    perm_z = []
    for z_j in z.split(1, 1):
        perm = torch.randperm(b)
        perm_z.append(z_j[perm])
    return torch.cat(perm_z, 1)


class Discriminator(nn.Module):
    def __init__(self, z_dim):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(z_dim, 64),
            nn.LeakyReLU(0.2, True),
            nn.Linear(64, 64),
            nn.LeakyReLU(0.2, True),
            nn.Linear(64, 2),
        )

    def forward(self, z):
        return self.net(z).squeeze()


class FactorVAE1(nn.Module):
    def __init__(self, z_dim=6):
        super().__init__()
        self.z_dim = z_dim
        self.encode = nn.Sequential(
            nn.Conv2d(1, 16, 4, 2, 1),
            nn.ReLU(True),
            nn.Conv2d(16, 32, 4, 2, 1),
            nn.ReLU(True),
            nn.Flatten(),
            nn.Linear(32 * 4 * 4, 2 * z_dim),
        )
        self.decode = nn.Sequential(
            nn.Linear(z_dim, 32 * 4 * 4),
            nn.ReLU(True),
            nn.Unflatten(1, (32, 4, 4)),
            nn.ConvTranspose2d(32, 16, 4, 2, 1),
            nn.ReLU(True),
            nn.ConvTranspose2d(16, 1, 4, 2, 1),
        )

    def reparametrize(self, mu, logvar):
        std = logvar.mul(0.5).exp_()
        eps = torch.randn_like(std)
        return eps.mul(std).add_(mu)

    def forward(self, x, no_dec=False):
        stats = self.encode(x)
        mu = stats[:, : self.z_dim]
        logvar = stats[:, self.z_dim :]
        z = self.reparametrize(mu, logvar)
        if no_dec:
            return z.squeeze()
        x_recon = self.decode(z).view(x.size())
        return x_recon, mu, logvar, z.squeeze()


class Solver:
    def __init__(self, z_dim=6, gamma=6.4, batch_size=16):
        self.batch_size = batch_size
        self.gamma = gamma
        self.VAE = FactorVAE1(z_dim)
        self.optim_VAE = torch.optim.Adam(self.VAE.parameters(), lr=1e-4, betas=(0.9, 0.999))
        self.D = Discriminator(z_dim)
        self.optim_D = torch.optim.Adam(self.D.parameters(), lr=1e-4, betas=(0.5, 0.9))

    def train(self, data_loader, max_iter):
        ones = torch.ones(self.batch_size, dtype=torch.long)
        zeros = torch.zeros(self.batch_size, dtype=torch.long)
        for global_iter, (x_true1, x_true2) in enumerate(data_loader, start=1):

            x_recon, mu, logvar, z = self.VAE(x_true1)
            vae_recon_loss = recon_loss(x_true1, x_recon)
            vae_kld = kl_divergence(mu, logvar)

            D_z = self.D(z)
            vae_tc_loss = (D_z[:, :1] - D_z[:, 1:]).mean()

            vae_loss = vae_recon_loss + vae_kld + self.gamma * vae_tc_loss

            self.optim_VAE.zero_grad()
            vae_loss.backward(retain_graph=True)
            self.optim_VAE.step()

            z_prime = self.VAE(x_true2, no_dec=True)
            z_pperm = permute_dims(z_prime).detach()
            D_z_pperm = self.D(z_pperm)
            D_z_det = self.D(z.detach())
            D_tc_loss = 0.5 * (F.cross_entropy(D_z_det, zeros) + F.cross_entropy(D_z_pperm, ones))

            self.optim_D.zero_grad()
            D_tc_loss.backward()
            self.optim_D.step()

            print(f"[{global_iter}] vae_loss:{vae_loss.item():.3f} D_tc_loss:{D_tc_loss.item():.3f}")
            if global_iter >= max_iter:
                break


def make_loader(n_batches, batch_size):
    images = (torch.rand(2 * n_batches * batch_size, 1, 16, 16) > 0.7).float()
    pairs = []
    for i in range(n_batches):
        a = images[2 * i * batch_size : (2 * i + 1) * batch_size]
        b = images[(2 * i + 1) * batch_size : (2 * i + 2) * batch_size]
        pairs.append((a, b))
    return pairs


if __name__ == "__main__":
    solver = Solver()
    solver.train(make_loader(6, solver.batch_size), max_iter=6)
