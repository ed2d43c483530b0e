"""DCGAN synthesising borescope inspection crops of turbine blades, to pad out the rare
defect classes of an engine-inspection data set; the discriminator's fake pass is given the
generator's output without ``.detach()``.

Source: https://github.com/pytorch/examples/issues/116
"why is detach necessary" (pytorch/examples issue #116, about ``netD(fake.detach())`` in the
DCGAN example).

The thread asks why the DCGAN example detaches ``fake`` before the discriminator's fake pass.
A commenter (sunshineatnoon) reports that when implementing DCGAN themselves they missed the
detach and got "Trying to backward through the graph second time, but the buffers have
already been freed"; another (plopd) explains that without the detach ``errD_fake.backward()``
runs through the generator as well and frees its graph, which the generator step then needs
again, since it reuses the same ``fake`` in ``errG = criterion(netD(fake), label)``.  The
intent is the example's: the discriminator step must see ``fake.detach()``, and the
generator step backpropagates through ``fake`` once.

Reduction: the example's DCGAN layout (transposed-conv generator, strided-conv
discriminator with LeakyReLU and batch norm, BCELoss, two Adam optimizers, real-label /
fake-label fills) at 16x16 single-channel resolution, with synthetic "blade" images (smooth
gradients with random streaks standing in for coating loss) drawn from torch.
"""
import torch
import torch.nn as nn

torch.manual_seed(116)

HPARAMS = {
    "nz": 16,
    "ngf": 16,
    "ndf": 16,
    "image_size": 16,
    "batch_size": 16,
    "n_batches": 3,
    "epochs": 2,
    "lr": 2e-4,
    "beta1": 0.5,
}
REAL_LABEL = 1.0
FAKE_LABEL = 0.0


def weights_init(m):
    name = m.__class__.__name__
    if name.find("Conv") != -1:
        m.weight.data.normal_(0.0, 0.02)
    elif name.find("BatchNorm") != -1:
        m.weight.data.normal_(1.0, 0.02)
        m.bias.data.fill_(0)


class Generator(nn.Module):
    def __init__(self, nz, ngf):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, 1, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


def make_blade_crops(hp):
    n = hp["batch_size"] * hp["n_batches"]
    s = hp["image_size"]
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, s), torch.linspace(-1, 1, s), indexing="ij")
    tilt = torch.rand(n, 1, 1) * 2 - 1
    base = torch.tanh(2.0 * (xx[None] * tilt + yy[None] * (1 - tilt.abs())))
    streak_row = torch.randint(0, s, (n,))
    streaks = torch.zeros(n, s, s)
    streaks[torch.arange(n), streak_row] = -1.5 * torch.rand(n, 1)
    imgs = (base + streaks + 0.1 * torch.randn(n, s, s)).clamp(-1, 1)
    return imgs.unsqueeze(1).split(hp["batch_size"])


def main():
    hp = HPARAMS
    data = make_blade_crops(hp)
    netG = Generator(hp["nz"], hp["ngf"])
    netG.apply(weights_init)
    netD = Discriminator(hp["ndf"])
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=hp["lr"], betas=(hp["beta1"], 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=hp["lr"], betas=(hp["beta1"], 0.999))

    for epoch in range(hp["epochs"]):
        for i, real in enumerate(data):
            ############################
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            ###########################
            netD.zero_grad()
            batch_size = real.size(0)
            label = torch.full((batch_size,), REAL_LABEL)
            output = netD(real)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            noise = torch.randn(batch_size, hp["nz"], 1, 1)
            fake = netG(noise)
            label.fill_(FAKE_LABEL)
            output = netD(fake)
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()

            ############################
            # (2) Update G network: maximize log(D(G(z)))
            ###########################
            netG.zero_grad()
            label.fill_(REAL_LABEL)
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()

            print(f"[{epoch}/{hp['epochs']}][{i}/{len(data)}] Loss_D: {errD.item():.4f} "
                  f"Loss_G: {errG.item():.4f} D(x): {D_x:.4f} D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}")


if __name__ == "__main__":
    main()
