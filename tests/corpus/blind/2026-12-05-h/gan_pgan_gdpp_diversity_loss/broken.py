"""PGAN-style GAN trained with the GDPP diversity loss on the generator.

Reduced from https://github.com/facebookresearch/pytorch_GAN_zoo/issues/83: the author trains
the zoo's progressive GAN on CIFAR-10 with ``--GDPP True``. The trainer's ``optimize_parameters``
updates the discriminator (real/fake loss, epsilon drift term), then the generator with the
adversarial loss plus the GDPP loss, which compares the eigen-decomposition of the
discriminator's last features on real and on generated images.
Synthetic 8x8 images stand in for CIFAR-10.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

LATENT = 16
BATCH = 8
EPSILON_D = 0.001


class Generator(nn.Module):
    def __init__(self, latent_dim):
        super().__init__()
        self.fc = nn.Linear(latent_dim, 32 * 4 * 4)
        self.up = nn.Sequential(
            nn.Upsample(scale_factor=2),
            nn.Conv2d(32, 16, 3, padding=1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(16, 3, 3, padding=1),
        )

    def forward(self, z):
        x = F.leaky_relu(self.fc(z), 0.2).view(-1, 32, 4, 4)
        return torch.tanh(self.up(x))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.LeakyReLU(0.2),
            nn.AvgPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.LeakyReLU(0.2),
            nn.Flatten(),
            nn.Linear(32 * 4 * 4, 24),
            nn.LeakyReLU(0.2),
        )
        self.decision = nn.Linear(24, 1)

    def forward(self, x, get_feature=False):
        phi = self.features(x)
        out = self.decision(phi)
        if get_feature:
            return out, phi
        return out


def gdpp_loss(phi_fake, phi_real, backward=True):
    """GDPP: match the eigen-structure of fake and real discriminator features."""

    def compute_diversity(phi):
        phi = F.normalize(phi, p=2, dim=1)
        sb = torch.mm(phi, phi.t())
        eig_vals, eig_vecs = torch.linalg.eigh(sb)
        return eig_vals, eig_vecs

    def normalize_min_max(eig_vals):
        min_v, max_v = torch.min(eig_vals), torch.max(eig_vals)
        return (eig_vals - min_v) / (max_v - min_v)

    fake_eig_vals, fake_eig_vecs = compute_diversity(phi_fake)
    real_eig_vals, real_eig_vecs = compute_diversity(phi_real)
    magnitude_loss = 0.0001 * F.mse_loss(target=real_eig_vals, input=fake_eig_vals)
    structure_loss = -torch.sum(torch.mul(fake_eig_vecs, real_eig_vecs), 0)
    normalized_real_eig_vals = normalize_min_max(real_eig_vals)
    weighted_structure_loss = torch.sum(torch.mul(normalized_real_eig_vals, structure_loss))
    gdpp = magnitude_loss + weighted_structure_loss
    if backward:
        gdpp.backward(retain_graph=True)
    return gdpp.item()


class PGANTrainer:
    def __init__(self, use_gdpp=True):
        self.netG = Generator(LATENT)
        self.netD = Discriminator()
        self.optimizerG = torch.optim.Adam(self.netG.parameters(), lr=1e-3, betas=(0.0, 0.99))
        self.optimizerD = torch.optim.Adam(self.netD.parameters(), lr=1e-3, betas=(0.0, 0.99))
        self.use_gdpp = use_gdpp

    def build_noise(self, n):
        return torch.randn(n, LATENT)

    def optimize_parameters(self, real_input):
        losses = {}
        n = real_input.size(0)

        # update the discriminator
        self.optimizerD.zero_grad()
        pred_real_d = self.netD(real_input)
        loss_d = F.softplus(-pred_real_d).mean()
        pred_fake_g = self.netG(self.build_noise(n)).detach()
        pred_fake_d = self.netD(pred_fake_g)
        loss_d = loss_d + F.softplus(pred_fake_d).mean()
        loss_d = loss_d + (pred_real_d[:, 0] ** 2).sum() * EPSILON_D
        loss_d.backward(retain_graph=True)
        self.optimizerD.step()
        losses["lossD"] = loss_d.item()

        # update the generator
        self.optimizerG.zero_grad()
        self.optimizerD.zero_grad()
        pred_fake_g = self.netG(self.build_noise(n))
        pred_fake_d, phi_g_fake = self.netD(pred_fake_g, True)
        loss_g_fake = F.softplus(-pred_fake_d).mean()
        losses["lossG_fake"] = loss_g_fake.item()
        loss_g_fake.backward()

        if self.use_gdpp:
            _, phi_d_real = self.netD(real_input, True)
            losses["lossG_GDPP"] = gdpp_loss(phi_d_real, phi_g_fake, backward=True)

        self.optimizerG.step()
        return losses


def main():
    trainer = PGANTrainer(use_gdpp=True)
    dataset = torch.rand(64, 3, 8, 8) * 2 - 1
    for epoch in range(2):
        for i in range(0, len(dataset), BATCH):
            losses = trainer.optimize_parameters(dataset[i : i + BATCH])
            if i % 32 == 0:
                print(epoch, i, {k: round(v, 4) for k, v in losses.items()})


if __name__ == "__main__":
    main()
