"""DCGAN-style loop on 1-D signals: D's output on the fake batch is computed once and reused for G's loss."""

import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self, nz=8, width=32, out=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(nz, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Linear(width, out), nn.Tanh()
        )

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self, inp=16, width=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inp, width), nn.LeakyReLU(0.2), nn.Linear(width, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x).view(-1)


def real_batch(n):
    t = torch.linspace(0, 1, 16)
    phase = torch.rand(n, 1)
    return torch.sin(6.28 * (t + phase))


def main():
    torch.manual_seed(1)
    netG, netD = Generator(), Discriminator()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=1e-3, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=1e-3, betas=(0.5, 0.999))
    criterion = nn.BCELoss()
    for epoch in range(3):
        for i in range(4):
            real = real_batch(24)
            label_real = torch.full((24,), 1.0)
            label_fake = torch.full((24,), 0.0)
            noise = torch.randn(24, 8)
            fake = netG(noise)

            netD.zero_grad()
            errD_real = criterion(netD(real), label_real)
            output = netD(fake)
            errD_fake = criterion(output, label_fake)
            errD = errD_real + errD_fake
            errD.backward(retain_graph=True)

            netG.zero_grad()
            errG = criterion(output, label_real)
            errG.backward(inputs=list(netG.parameters()))
            optimizerD.step()
            optimizerG.step()
        print(epoch, errD.item(), errG.item())


if __name__ == "__main__":
    main()
