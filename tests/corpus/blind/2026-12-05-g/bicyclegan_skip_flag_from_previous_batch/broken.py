"""Reduced from https://github.com/junyanz/BicycleGAN/issues/21

The author was training BicycleGAN (edges2shoes: encoder E, generator G, two discriminators D and
D2, one optimizer each) with the repository's train.py. At the end of the first epoch, on the
last, odd-sized batch, the log printed "skip this point data_size = 1" and then update_G() raised
"Trying to backward through the graph a second time" at `self.loss_G.backward(retain_graph=True)`.
In that version train.py asked `model.is_skip()` before `model.update_D(data)`, but the flag was
only set inside forward(), which update_D calls: for the short batch is_skip() still answered for
the previous batch, forward() returned early, update_D skipped its step, and update_G then
backwarded the losses of the previous batch's stored outputs, whose graph the previous
`loss_z_L1.backward()` had freed. The maintainers' fix (commit a2f1f59, "bug fix (is_skip)")
decides the skip from the batch just set, in train.py, before any update: `model.set_input(data)`,
then `if model.is_skip(): continue`, then update_D() and update_G().

Here: the same model class and training loop on synthetic paired images (8x8, 5 pairs, batch size
2, so the first epoch ends with a batch of one), small networks, seeded, on CPU. update_G uses the
repository's current order (both backwards, E frozen for the latent loss, then both steps): the 2018
order stepped E before `loss_z_L1.backward()`, which current torch rejects (issue #87).
"""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class Opt:
    isTrain = True
    batchSize = 2
    nz = 4
    lambda_GAN = 1.0
    lambda_GAN2 = 1.0
    lambda_L1 = 10.0
    lambda_kl = 0.01
    lambda_z = 0.5
    lr = 0.0002
    niter = 3


class E_NLayers(nn.Module):
    def __init__(self, nz):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(8, 16, 3, 2, 1),
                                  nn.LeakyReLU(0.2), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(16, nz)
        self.fcVar = nn.Linear(16, nz)

    def forward(self, x):
        h = self.conv(x).flatten(1)
        return self.fc(h), self.fcVar(h)


class G_add_input(nn.Module):
    def __init__(self, nz):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3 + nz, 16, 3, 1, 1), nn.ReLU(), nn.Conv2d(16, 16, 3, 1, 1), nn.ReLU(),
                                 nn.Conv2d(16, 3, 3, 1, 1), nn.Tanh())

    def forward(self, x, z):
        z_img = z.view(z.size(0), z.size(1), 1, 1).expand(z.size(0), z.size(1), x.size(2), x.size(3))
        return self.net(torch.cat([x, z_img], 1))


class D_NLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(3, 8, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 3, 1, 1))

    def forward(self, x):
        return self.model(x)


class GANLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = nn.MSELoss()

    def __call__(self, pred, target_is_real):
        target = torch.ones_like(pred) if target_is_real else torch.zeros_like(pred)
        return self.loss(pred, target)


class BiCycleGANModel:
    def __init__(self, opt):
        self.opt = opt
        self.netE = E_NLayers(opt.nz)
        self.netG = G_add_input(opt.nz)
        self.netD = D_NLayers()
        self.netD2 = D_NLayers()
        self.criterionGAN = GANLoss()
        self.criterionL1 = nn.L1Loss()
        self.optimizer_E = torch.optim.Adam(self.netE.parameters(), lr=opt.lr, betas=(0.5, 0.999))
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=opt.lr, betas=(0.5, 0.999))
        self.optimizer_D = torch.optim.Adam(self.netD.parameters(), lr=opt.lr, betas=(0.5, 0.999))
        self.optimizer_D2 = torch.optim.Adam(self.netD2.parameters(), lr=opt.lr, betas=(0.5, 0.999))
        self.skip = False

    def set_input(self, data):
        self.input_A, self.input_B = data

    def is_skip(self):
        return self.skip

    def set_requires_grad(self, nets, requires_grad=False):
        if not isinstance(nets, list):
            nets = [nets]
        for net in nets:
            for param in net.parameters():
                param.requires_grad = requires_grad

    def get_z_random(self, batchSize, nz):
        return torch.randn(batchSize, nz)

    def forward(self):
        self.skip = self.opt.isTrain and self.input_A.size(0) < self.opt.batchSize
        if self.skip:
            print('skip this point data_size = %d' % self.input_A.size(0))
            return
        half_size = self.opt.batchSize // 2
        self.real_A_encoded = self.input_A[0:half_size]
        self.real_B_encoded = self.input_B[0:half_size]
        self.real_B_random = self.input_B[half_size:]
        # get encoded z
        self.mu, self.logvar = self.netE(self.real_B_encoded)
        std = self.logvar.mul(0.5).exp_()
        eps = self.get_z_random(std.size(0), std.size(1))
        self.z_encoded = eps.mul(std).add_(self.mu)
        # get random z
        self.z_random = self.get_z_random(self.real_A_encoded.size(0), self.opt.nz)
        # generate fake_B_encoded and fake_B_random
        self.fake_B_encoded = self.netG(self.real_A_encoded, self.z_encoded)
        self.fake_B_random = self.netG(self.real_A_encoded, self.z_random)
        self.fake_data_encoded = self.fake_B_encoded
        self.fake_data_random = self.fake_B_random
        self.real_data_encoded = self.real_B_encoded
        self.real_data_random = self.real_B_random
        # compute z_predict
        self.mu2, logvar2 = self.netE(self.fake_B_random)

    def backward_D(self, netD, real, fake):
        pred_fake = netD(fake.detach())
        pred_real = netD(real)
        loss_D_fake = self.criterionGAN(pred_fake, False)
        loss_D_real = self.criterionGAN(pred_real, True)
        loss_D = loss_D_fake + loss_D_real
        loss_D.backward()
        return loss_D

    def backward_G_GAN(self, fake, netD, ll):
        pred_fake = netD(fake)
        return self.criterionGAN(pred_fake, True) * ll

    def backward_EG(self):
        # 1, G(A) should fool D
        self.loss_G_GAN = self.backward_G_GAN(self.fake_data_encoded, self.netD, self.opt.lambda_GAN)
        self.loss_G_GAN2 = self.backward_G_GAN(self.fake_data_random, self.netD2, self.opt.lambda_GAN2)
        # 2. KL loss
        kl_element = self.mu.pow(2).add_(self.logvar.exp()).mul_(-1).add_(1).add_(self.logvar)
        self.loss_kl = torch.sum(kl_element).mul_(-0.5) * self.opt.lambda_kl
        # 3, reconstruction |fake_B-real_B|
        self.loss_G_L1 = self.criterionL1(self.fake_B_encoded, self.real_B_encoded) * self.opt.lambda_L1

        self.loss_G = self.loss_G_GAN + self.loss_G_GAN2 + self.loss_G_L1 + self.loss_kl
        self.loss_G.backward(retain_graph=True)

    def update_D(self, data):
        self.set_requires_grad([self.netD, self.netD2], True)
        self.set_input(data)
        self.forward()
        if self.is_skip():
            return
        # update D1
        self.optimizer_D.zero_grad()
        self.loss_D = self.backward_D(self.netD, self.real_data_encoded, self.fake_data_encoded)
        self.optimizer_D.step()
        # update D2
        self.optimizer_D2.zero_grad()
        self.loss_D2 = self.backward_D(self.netD2, self.real_data_random, self.fake_data_random)
        self.optimizer_D2.step()

    def backward_G_alone(self):
        # 3, reconstruction |(E(G(A, z_random)))-z_random|
        self.loss_z_L1 = torch.mean(torch.abs(self.mu2 - self.z_random)) * self.opt.lambda_z
        self.loss_z_L1.backward()

    def update_G(self):
        # update G and E
        self.set_requires_grad([self.netD, self.netD2], False)
        self.optimizer_E.zero_grad()
        self.optimizer_G.zero_grad()
        self.backward_EG()
        # update G alone
        self.set_requires_grad([self.netE], False)
        self.backward_G_alone()
        self.set_requires_grad([self.netE], True)
        self.optimizer_E.step()
        self.optimizer_G.step()


if __name__ == '__main__':
    opt = Opt()
    # paired edges -> shoes stand-ins: 5 pairs, so the last batch of an epoch has one pair
    images_A = torch.rand(5, 3, 8, 8) * 2 - 1
    images_B = torch.tanh(images_A.flip(1) + 0.3 * torch.randn(5, 3, 8, 8))
    dataset = DataLoader(TensorDataset(images_A, images_B), batch_size=opt.batchSize, shuffle=False)
    model = BiCycleGANModel(opt)

    total_steps = 0
    for epoch in range(1, opt.niter + 1):
        for i, data in enumerate(dataset):
            total_steps += opt.batchSize
            if model.is_skip():
                continue
            model.update_D(data)
            model.update_G()
        print('End of epoch %d, G: %.3f, D: %.3f' % (epoch, model.loss_G.item(), model.loss_D.item()))
