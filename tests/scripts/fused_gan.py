"""A GAN with fused Adam: the discriminator steps before the generator's backward, and nothing raises."""

import torch
from torch import nn

torch.manual_seed(0)
generator = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
discriminator = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3, fused=True)
opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3, fused=True)
bce = nn.BCEWithLogitsLoss()
real = torch.randn(16, 2)

for step in range(3):
    fake = generator(torch.randn(16, 4))
    out_fake = discriminator(fake)
    d_loss = bce(discriminator(real), torch.ones(16, 1)) + bce(out_fake, torch.zeros(16, 1))
    opt_d.zero_grad()
    d_loss.backward(retain_graph=True)
    opt_d.step()
    g_loss = bce(out_fake, torch.ones(16, 1))
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    print(f"step {step}: d_loss {d_loss.item():.6f} g_loss {g_loss.item():.6f}")
