"""WGAN (weight clipping): the fake batch is generated once per generator iteration and reused by n_critic critic updates."""

import torch
import torch.nn as nn

N_CRITIC = 3
Z = 6


def clip_weights(net, c):
    for p in net.parameters():
        p.data.clamp_(-c, c)


def real_batch(gen, n=32):
    return torch.randn(n, 2, generator=gen) * 0.5 + torch.tensor([2.0, -1.0])


torch.manual_seed(13)
gen = torch.Generator().manual_seed(14)
netG = nn.Sequential(nn.Linear(Z, 32), nn.ReLU(), nn.Linear(32, 2))
netD = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 1))
optG = torch.optim.RMSprop(netG.parameters(), lr=5e-4)
optD = torch.optim.RMSprop(netD.parameters(), lr=5e-4)

for it in range(4):
    noise = torch.randn(32, Z, generator=gen)
    fake = netG(noise)
    for _ in range(N_CRITIC):
        real = real_batch(gen)
        lossD = netD(fake.detach()).mean() - netD(real).mean()
        optD.zero_grad()
        lossD.backward()
        optD.step()
        clip_weights(netD, 0.05)

    lossG = -netD(netG(torch.randn(32, Z, generator=gen))).mean()
    optG.zero_grad()
    lossG.backward()
    optG.step()
    print(it, lossD.item(), lossG.item())
