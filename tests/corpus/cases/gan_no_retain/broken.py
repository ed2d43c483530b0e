"""A small GAN on 2-D points: the discriminator's loss reaches the generator through `fake`."""

import torch
import torch.nn as nn

torch.manual_seed(0)

latent_dim = 4
gen = nn.Sequential(nn.Linear(latent_dim, 16), nn.ReLU(), nn.Linear(16, 2))
disc = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.5, 0.999))
criterion = nn.BCEWithLogitsLoss()


def sample_real(n):
    angle = torch.rand(n, 1) * 6.283
    return torch.cat([angle.cos(), angle.sin()], dim=1) + 0.05 * torch.randn(n, 2)


for epoch in range(2):
    for it in range(5):
        real = sample_real(32)
        z = torch.randn(32, latent_dim)
        fake = gen(z)

        # --- discriminator ---
        opt_d.zero_grad()
        d_real = disc(real)
        d_fake = disc(fake)
        loss_d = criterion(d_real, torch.ones_like(d_real)) + criterion(d_fake, torch.zeros_like(d_fake))
        loss_d.backward()
        opt_d.step()

        # --- generator ---
        opt_g.zero_grad()
        pred = disc(fake)
        loss_g = criterion(pred, torch.ones_like(pred))
        loss_g.backward()
        opt_g.step()
    print(f"epoch {epoch}: loss_d={loss_d.item():.3f} loss_g={loss_g.item():.3f}")
