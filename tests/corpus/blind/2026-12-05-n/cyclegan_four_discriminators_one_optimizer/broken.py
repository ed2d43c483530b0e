"""CycleGAN (pytorch-CycleGAN-and-pix2pix style) extended to four discriminators under one optimizer.

Reduced from https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/356: the author
adds a second, lower-resolution discriminator per domain (netD_A2, netD_B2) next to netD_A and
netD_B and puts all four into a single optimizer_D, keeping the repository's
`backward_D_basic` helper; `optimize_parameters` updates both generators (GAN + cycle +
identity losses), then the discriminators. Synthetic unpaired 16x16 images, CPU.
"""

import itertools

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ResnetBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv_block = nn.Sequential(
            nn.Conv2d(dim, dim, 3, padding=1), nn.InstanceNorm2d(dim), nn.ReLU(True), nn.Conv2d(dim, dim, 3, padding=1)
        )

    def forward(self, x):
        return x + self.conv_block(x)


class ResnetGenerator(nn.Module):
    def __init__(self, input_nc=3, output_nc=3, ngf=8):
        super().__init__()
        self.model = nn.Sequential(
            nn.Conv2d(input_nc, ngf, 3, padding=1),
            nn.InstanceNorm2d(ngf),
            nn.ReLU(True),
            ResnetBlock(ngf),
            nn.Conv2d(ngf, output_nc, 3, padding=1),
            nn.Tanh(),
        )

    def forward(self, x):
        return self.model(x)


class NLayerDiscriminator(nn.Module):
    def __init__(self, input_nc=3, ndf=8):
        super().__init__()
        self.model = nn.Sequential(
            nn.Conv2d(input_nc, ndf, 4, stride=2, padding=1),
            nn.LeakyReLU(0.2, True),
            nn.Conv2d(ndf, 1, 3, padding=1),
        )

    def forward(self, x):
        return self.model(x)


class GANLoss(nn.Module):
    def forward(self, prediction, target_is_real):
        target = torch.ones_like(prediction) if target_is_real else torch.zeros_like(prediction)
        return F.mse_loss(prediction, target)


def downsample(x):
    return F.avg_pool2d(x, 2)


class CycleGANModel:
    def __init__(self, lr=2e-4, lambda_A=10.0, lambda_B=10.0, lambda_idt=0.5):
        self.lambda_A, self.lambda_B, self.lambda_idt = lambda_A, lambda_B, lambda_idt
        self.netG_A = ResnetGenerator()
        self.netG_B = ResnetGenerator()
        self.netD_A = NLayerDiscriminator()
        self.netD_B = NLayerDiscriminator()
        self.netD_A2 = NLayerDiscriminator()
        self.netD_B2 = NLayerDiscriminator()
        self.criterionGAN = GANLoss()
        self.criterionCycle = nn.L1Loss()
        self.criterionIdt = nn.L1Loss()
        self.optimizer_G = torch.optim.Adam(
            itertools.chain(self.netG_A.parameters(), self.netG_B.parameters()), lr=lr, betas=(0.5, 0.999)
        )
        self.optimizer_D = torch.optim.Adam(
            itertools.chain(
                self.netD_A.parameters(),
                self.netD_B.parameters(),
                self.netD_A2.parameters(),
                self.netD_B2.parameters(),
            ),
            lr=lr,
            betas=(0.5, 0.999),
        )

    def set_input(self, real_A, real_B):
        self.real_A, self.real_B = real_A, real_B

    def forward(self):
        self.fake_B = self.netG_A(self.real_A)
        self.rec_A = self.netG_B(self.fake_B)
        self.fake_A = self.netG_B(self.real_B)
        self.rec_B = self.netG_A(self.fake_A)

    def set_requires_grad(self, nets, requires_grad=False):
        for net in nets:
            for param in net.parameters():
                param.requires_grad = requires_grad

    def backward_D_basic(self, netD, real, fake):
        pred_real = netD(real)
        loss_D_real = self.criterionGAN(pred_real, True)
        pred_fake = netD(fake.detach())
        loss_D_fake = self.criterionGAN(pred_fake, False)
        loss_D = (loss_D_real + loss_D_fake) * 0.5
        loss_D.backward()
        return loss_D

    def backward_D(self):
        self.loss_D_A = self.backward_D_basic(self.netD_A, self.real_B, self.fake_B)
        self.loss_D_B = self.backward_D_basic(self.netD_B, self.real_A, self.fake_A)
        self.loss_D_A2 = self.backward_D_basic(self.netD_A2, downsample(self.real_B), downsample(self.fake_B))
        self.loss_D_B2 = self.backward_D_basic(self.netD_B2, downsample(self.real_A), downsample(self.fake_A))
        self.loss_D = self.loss_D_A + self.loss_D_B + self.loss_D_A2 + self.loss_D_B2
        self.loss_D.backward()

    def backward_G(self):
        self.idt_A = self.netG_A(self.real_B)
        self.loss_idt_A = self.criterionIdt(self.idt_A, self.real_B) * self.lambda_B * self.lambda_idt
        self.idt_B = self.netG_B(self.real_A)
        self.loss_idt_B = self.criterionIdt(self.idt_B, self.real_A) * self.lambda_A * self.lambda_idt
        self.loss_G_A = self.criterionGAN(self.netD_A(self.fake_B), True) + self.criterionGAN(
            self.netD_A2(downsample(self.fake_B)), True
        )
        self.loss_G_B = self.criterionGAN(self.netD_B(self.fake_A), True) + self.criterionGAN(
            self.netD_B2(downsample(self.fake_A)), True
        )
        self.loss_cycle_A = self.criterionCycle(self.rec_A, self.real_A) * self.lambda_A
        self.loss_cycle_B = self.criterionCycle(self.rec_B, self.real_B) * self.lambda_B
        self.loss_G = (
            self.loss_G_A + self.loss_G_B + self.loss_cycle_A + self.loss_cycle_B + self.loss_idt_A + self.loss_idt_B
        )
        self.loss_G.backward()

    def optimize_parameters(self):
        discriminators = [self.netD_A, self.netD_B, self.netD_A2, self.netD_B2]
        self.forward()
        self.set_requires_grad(discriminators, False)
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()
        self.set_requires_grad(discriminators, True)
        self.optimizer_D.zero_grad()
        self.backward_D()
        self.optimizer_D.step()


def unpaired_loader(n_batches, batch_size=2, size=16):
    for _ in range(n_batches):
        real_A = torch.rand(batch_size, 3, size, size) * 2 - 1
        real_B = torch.flip(torch.rand(batch_size, 3, size, size), dims=[3]) * 1.5 - 0.75
        yield real_A, real_B


if __name__ == "__main__":
    model = CycleGANModel()
    for epoch in range(2):
        for i, (real_A, real_B) in enumerate(unpaired_loader(3)):
            model.set_input(real_A, real_B)
            model.optimize_parameters()
            print(f"epoch {epoch} iter {i} G {model.loss_G.item():.3f} D {model.loss_D.item():.3f}")
