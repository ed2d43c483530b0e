"""Reduced from https://github.com/Zhaoyi-Yan/Shift-Net_pytorch/issues/34

Shift-Net (image inpainting) trains its generator against a discriminator in the pix2pix style:
backward_D, optimizer_D.step(), then backward_G, optimizer_G.step(). With the relativistic
average GAN loss (gan_type 're_avg_gan'), training stopped with "Trying to backward through the
graph a second time, but the buffers have already been freed" (issue #34, "`re_avg_gan` is
broken"). backward_G computes a fresh pred_fake = netD(fake_B) for the generator, but its
relativistic loss reads self.pred_fake, the discriminator's output on fake_B.detach() kept from
backward_D, whose graph loss_D.backward() had freed. The author's commit then retained D's graph
(loss_D.backward(retain_graph=True)), and the loss was later removed; the generator's loss was
meant to compare D(real) with D(G(A)) as they are at the generator's step, through G.

Here: a small inpainting generator fills a square hole in synthetic images; L1 plus the
relativistic average adversarial loss, as in ShiftNetModel.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)


class Opt:
    fineSize = 16
    gan_type = "re_avg_gan"
    gan_weight = 0.2
    lambda_A = 100.0
    lr = 2e-4
    beta1 = 0.5


class GANLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = nn.BCEWithLogitsLoss()

    def forward(self, prediction, target_is_real):
        target = torch.ones_like(prediction) if target_is_real else torch.zeros_like(prediction)
        return self.loss(prediction, target)


def define_G(ngf=16):
    return nn.Sequential(
        nn.Conv2d(4, ngf, 3, padding=1), nn.LeakyReLU(0.2),
        nn.Conv2d(ngf, ngf, 3, padding=2, dilation=2), nn.BatchNorm2d(ngf), nn.ReLU(),
        nn.Conv2d(ngf, ngf, 3, padding=1), nn.BatchNorm2d(ngf), nn.ReLU(),
        nn.Conv2d(ngf, 3, 3, padding=1), nn.Tanh(),
    )


def define_D(ndf=16):
    return nn.Sequential(
        nn.Conv2d(3, ndf, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
        nn.Conv2d(ndf, 2 * ndf, 4, stride=2, padding=1), nn.BatchNorm2d(2 * ndf), nn.LeakyReLU(0.2),
        nn.Conv2d(2 * ndf, 1, 3, padding=1),
    )


class ShiftNetModel:
    def __init__(self, opt):
        self.opt = opt
        self.netG = define_G()
        self.netD = define_D()
        self.criterionGAN = GANLoss()
        self.criterionL1 = nn.L1Loss()
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
        self.optimizer_D = torch.optim.Adam(self.netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
        s = opt.fineSize
        self.mask_global = torch.zeros(1, 1, s, s, dtype=torch.bool)
        self.mask_global[:, :, s // 4: 3 * s // 4, s // 4: 3 * s // 4] = True

    def set_requires_grad(self, net, requires_grad):
        for p in net.parameters():
            p.requires_grad = requires_grad

    def set_input(self, real_B):
        real_A = real_B.clone()
        real_A.masked_fill_(self.mask_global, 0.0)
        mask = self.mask_global.expand(real_A.size(0), 1, -1, -1).float()
        self.real_A = torch.cat((real_A, mask), dim=1)
        self.real_B = real_B

    def forward(self):
        self.fake_B = self.netG(self.real_A)

    def backward_D(self):
        self.pred_fake = self.netD(self.fake_B.detach())
        self.pred_real = self.netD(self.real_B)
        if self.opt.gan_type in ["vanilla", "lsgan"]:
            self.loss_D = (self.criterionGAN(self.pred_fake, False) + self.criterionGAN(self.pred_real, True)) * 0.5
        elif self.opt.gan_type == "re_avg_gan":
            self.loss_D = (self.criterionGAN(self.pred_real - torch.mean(self.pred_fake), True)
                           + self.criterionGAN(self.pred_fake - torch.mean(self.pred_real), False)) / 2.
        self.loss_D.backward()

    def backward_G(self):
        pred_fake = self.netD(self.fake_B)
        if self.opt.gan_type in ["vanilla", "lsgan"]:
            self.loss_G_GAN = self.criterionGAN(pred_fake, True)
        elif self.opt.gan_type == "re_avg_gan":
            self.pred_real = self.netD(self.real_B)
            self.loss_G_GAN = (self.criterionGAN(self.pred_real - torch.mean(pred_fake), False)
                               + self.criterionGAN(pred_fake - torch.mean(self.pred_real), True)) / 2.
        self.loss_G_GAN *= self.opt.gan_weight
        self.loss_G_L1 = self.criterionL1(self.fake_B, self.real_B) * self.opt.lambda_A
        self.loss_G = self.loss_G_L1 + self.loss_G_GAN
        self.loss_G.backward()

    def optimize_parameters(self):
        self.forward()
        # update D
        self.set_requires_grad(self.netD, True)
        self.optimizer_D.zero_grad()
        self.backward_D()
        self.optimizer_D.step()
        # update G
        self.set_requires_grad(self.netD, False)
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()


def make_images(n, size):
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, size), torch.linspace(-1, 1, size), indexing="ij")
    phase = torch.rand(n, 3, 1, 1) * 6.28
    freq = 1 + 3 * torch.rand(n, 3, 1, 1)
    return torch.sin(freq * xx + phase) * torch.cos(freq * yy)


opt = Opt()
model = ShiftNetModel(opt)
dataset = make_images(32, opt.fineSize)
for epoch in range(3):
    for i in range(0, dataset.shape[0], 8):
        model.set_input(dataset[i:i + 8])
        model.optimize_parameters()
    print(epoch, model.loss_D.item(), model.loss_G.item())
