"""Conditional WGAN-GP deblurring of drone images of photovoltaic panels.

Source: https://github.com/KupynOrest/DeblurGAN/issues/56
("Backward twice when using wgan-gp as critic").  The reporter trained a
DeblurGAN-style ConditionalGAN (a ResNet generator that restores a blurred image,
a PatchGAN critic) on their own 640x480 data.  With the WGAN-GP critic,
``optimize_parameters`` runs the generator forward once and then calls
``backward_D`` ``criticUpdates`` (= 5) times on that same forward before the
generator step; with the other discriminators criticUpdates is 1 and training
worked.  The second critic update fails in ``self.loss_D.backward()`` with
"Trying to backward through the graph a second time, but the buffers have already
been freed".  The maintainer tied it to the WGAN critic being updated several
times per generator forward, and the fix merged for it (PR #91) passes
``retain_graph=True`` in ``backward_D``.

Reduction: the same ConditionalGAN class (set_input / forward / backward_D /
backward_G / optimize_parameters with criticUpdates = 5), a DiscLossWGANGP
helper with calc_gradient_penalty, and an L1 content loss.  The issue does not
show which tensor ties the reporter's critic loss to the generator's graph; here
it is the gradient-penalty interpolation, which mixes the real sharp image with
``fake_B`` itself (the repository passes ``fakeB.data``), so every critic
backward reaches back into the generator forward made once per batch.  Setting:
motion-blurred drone photographs of PV panel strings (one grey channel, 16x16
crops) restored before hot-spot and crack inspection.  Data are synthetic.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import autograd

torch.manual_seed(5)

HPARAMS = {
    "ngf": 4,
    "ndf": 4,
    "crop": 16,
    "batch_size": 4,
    "batches_per_epoch": 2,
    "epochs": 2,
    "lr": 1e-4,
    "beta1": 0.5,
    "lambda_A": 100.0,
    "criticUpdates": 5,
    "gp_lambda": 10.0,
}


class ResnetBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv_block = nn.Sequential(
            nn.Conv2d(dim, dim, 3, padding=1), nn.InstanceNorm2d(dim), nn.ReLU(True),
            nn.Conv2d(dim, dim, 3, padding=1), nn.InstanceNorm2d(dim))

    def forward(self, x):
        return x + self.conv_block(x)


class ResnetGenerator(nn.Module):
    def __init__(self, ngf, n_blocks=1, learn_residual=True):
        super().__init__()
        self.learn_residual = learn_residual
        self.model = nn.Sequential(
            nn.Conv2d(1, ngf, 3, padding=1), nn.InstanceNorm2d(ngf), nn.ReLU(True),
            *[ResnetBlock(ngf) for _ in range(n_blocks)],
            nn.Conv2d(ngf, 1, 3, padding=1), nn.Tanh())

    def forward(self, x):
        out = self.model(x)
        if self.learn_residual:
            out = torch.clamp(x + out, min=-1, max=1)
        return out


class NLayerDiscriminator(nn.Module):
    def __init__(self, ndf):
        super().__init__()
        self.model = nn.Sequential(
            nn.Conv2d(1, ndf, 4, stride=2, padding=1), nn.LeakyReLU(0.2, True),
            nn.Conv2d(ndf, ndf * 2, 4, stride=2, padding=1), nn.LeakyReLU(0.2, True),
            nn.Conv2d(ndf * 2, 1, 4, stride=1, padding=1))

    def forward(self, x):
        return self.model(x)


class ContentLoss:
    def __init__(self):
        self.criterion = nn.L1Loss()

    def get_loss(self, fake_im, real_im):
        return self.criterion(fake_im, real_im)


class DiscLossWGANGP:
    def __init__(self, gp_lambda):
        self.LAMBDA = gp_lambda

    def get_g_loss(self, net, real_a, fake_b):
        self.D_fake = net(fake_b)
        return -self.D_fake.mean()

    def calc_gradient_penalty(self, net_d, real_data, fake_data):
        alpha = torch.rand(real_data.size(0), 1, 1, 1).expand(real_data.size())
        interpolates = alpha * real_data + (1 - alpha) * fake_data
        interpolates.requires_grad_(True)
        disc_interpolates = net_d(interpolates)
        gradients = autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                                  grad_outputs=torch.ones_like(disc_interpolates),
                                  create_graph=True, retain_graph=True, only_inputs=True)[0]
        gradients = gradients.view(gradients.size(0), -1)
        return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * self.LAMBDA

    def get_loss(self, net, real_a, fake_b, real_b):
        self.D_fake = net(fake_b.detach()).mean()
        self.D_real = net(real_b).mean()
        self.loss_D = self.D_fake - self.D_real
        gradient_penalty = self.calc_gradient_penalty(net, real_b, fake_b)
        return self.loss_D + gradient_penalty


class ConditionalGAN:
    def __init__(self, hp):
        self.hp = hp
        self.netG = ResnetGenerator(hp["ngf"])
        self.netD = NLayerDiscriminator(hp["ndf"])
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=hp["lr"], betas=(hp["beta1"], 0.999))
        self.optimizer_D = torch.optim.Adam(self.netD.parameters(), lr=hp["lr"], betas=(hp["beta1"], 0.999))
        self.discLoss = DiscLossWGANGP(hp["gp_lambda"])
        self.contentLoss = ContentLoss()
        self.criticUpdates = hp["criticUpdates"]

    def set_input(self, batch):
        self.input_A = batch["A"]
        self.input_B = batch["B"]

    def forward(self):
        self.real_A = self.input_A
        self.fake_B = self.netG(self.real_A)
        self.real_B = self.input_B

    def backward_D(self):
        self.loss_D = self.discLoss.get_loss(self.netD, self.real_A, self.fake_B, self.real_B)
        self.loss_D.backward(retain_graph=True)

    def backward_G(self):
        self.loss_G_GAN = self.discLoss.get_g_loss(self.netD, self.real_A, self.fake_B)
        self.loss_G_Content = self.contentLoss.get_loss(self.fake_B, self.real_B) * self.hp["lambda_A"]
        self.loss_G = self.loss_G_GAN + self.loss_G_Content
        self.loss_G.backward()

    def optimize_parameters(self):
        self.forward()
        for _ in range(self.criticUpdates):
            self.optimizer_D.zero_grad()
            self.backward_D()
            self.optimizer_D.step()
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()

    def get_current_errors(self):
        return {"G_GAN": self.loss_G_GAN.item(), "G_L1": self.loss_G_Content.item(),
                "D_real+fake": self.loss_D.item()}


def make_panel_batches(hp):
    """Sharp panel crops (cell grid with bus bars) and horizontally motion-blurred copies."""
    n = hp["batch_size"] * hp["batches_per_epoch"]
    size = hp["crop"]
    grid = torch.zeros(size, size)
    grid[::4, :] = 1.0
    grid[:, ::5] = 0.6
    sharp = (grid.expand(n, 1, size, size) + 0.1 * torch.randn(n, 1, size, size)).clamp(-1, 1)
    kernel = torch.full((1, 1, 1, 5), 0.2)
    blurred = F.conv2d(sharp, kernel, padding=(0, 2))
    batches = []
    for i in range(hp["batches_per_epoch"]):
        s = slice(i * hp["batch_size"], (i + 1) * hp["batch_size"])
        batches.append({"A": blurred[s], "B": sharp[s]})
    return batches


def main():
    hp = HPARAMS
    dataset = make_panel_batches(hp)
    model = ConditionalGAN(hp)
    for epoch in range(hp["epochs"]):
        for i, data in enumerate(dataset):
            model.set_input(data)
            model.optimize_parameters()
            print(epoch, i, model.get_current_errors())


if __name__ == "__main__":
    main()
