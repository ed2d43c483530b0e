"""The intended training of latent_loss_with_encoder_frozen.py: the first backward keeps the graph.

A cVAE-GAN style step: one forward shared by two losses; the first loss trains the encoder and the generator, the
second (a latent regression through the encoder) is meant to train the generator only, so the encoder is switched
off around it with a helper. The first backward frees the generator's graph the second goes through."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def set_requires_grad(nets, flag):
    for net in nets if isinstance(nets, list) else [nets]:
        for p in net.parameters():
            p.requires_grad = flag


enc = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
gen = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 6))
opt_e = torch.optim.Adam(enc.parameters(), lr=1e-3)
opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
for it in range(3):
    real = torch.randn(16, 6)
    z = enc(real)
    recon = gen(z)
    z_random = torch.randn(16, 2)
    fake = gen(z_random)
    z_back = enc(fake)
    opt_e.zero_grad()
    opt_g.zero_grad()
    loss_rec = F.mse_loss(recon, real) + 0.1 * F.mse_loss(fake, real)
    loss_rec.backward(retain_graph=True)
    set_requires_grad(enc, False)
    loss_latent = F.l1_loss(z_back, z_random)
    loss_latent.backward()
    set_requires_grad(enc, True)
    opt_e.step()
    opt_g.step()
    print(it, round(loss_rec.item(), 4), round(loss_latent.item(), 4))
