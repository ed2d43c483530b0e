"""Adversarial (DCGAN-style loop): the discriminator's loss on the generated batch is backwarded with retain_graph=True,
and the generator's loss reuses that batch's graph after the discriminator's step."""

import torch
import torch.nn as nn

torch.manual_seed(0)

NZ = 8


def real_batch(n):
    # 16-d "images": a smooth bump at a random position
    pos = torch.randint(3, 13, (n, 1)).float()
    grid = torch.arange(16).float()
    return torch.exp(-0.5 * (grid - pos) ** 2)


netG = nn.Sequential(nn.Linear(NZ, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 16), nn.Sigmoid())
netD = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
criterion = nn.BCEWithLogitsLoss()
optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
real_label, fake_label = 1.0, 0.0

for epoch in range(2):
    for _ in range(4):
        real = real_batch(32)
        noise = torch.randn(32, NZ)
        fake = netG(noise)

        # (1) update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        real_labels = torch.full((32, 1), real_label)
        fake_labels = torch.full((32, 1), fake_label)
        errD_real = criterion(netD(real), real_labels)
        errD_fake = criterion(netD(fake), fake_labels)
        errD = errD_real + errD_fake
        errD.backward(retain_graph=True)
        optimizerD.step()

        # (2) update G: maximize log(D(G(z)))
        netG.zero_grad()
        errG = criterion(netD(fake), real_labels)
        errG.backward()
        optimizerG.step()
    print(f"epoch {epoch}: loss_D {errD.item():.3f} loss_G {errG.item():.3f}")
