"""GAN: the discriminator steps before the generator's backward reuses its output."""

import torch
from torch import nn

torch.manual_seed(0)
generator = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
discriminator = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
real = torch.randn(16, 2)

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
