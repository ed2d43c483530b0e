"""Skip-GANomaly: adversarial anomaly detection with a U-Net generator and a feature-matching discriminator.

Source: https://github.com/samet-akcay/skip-ganomaly/issues/16
The author trains the model class of the repository (reduced here: small conv nets, 16x16 images,
synthetic "normal" data): ``netg`` reconstructs a noisy input through skip connections, ``netd``
returns a real/fake score and its last feature map. ``optimize_params`` runs the forward pass once,
then updates the generator (adversarial + contextual L1 + latent feature-matching losses) and then
the discriminator, each with its own Adam, as the repository's ``update_netg`` / ``update_netd`` do.
"""

import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)


class Options:
    batchsize = 8
    isize = 16
    nc = 3
    ngf = 8
    ndf = 8
    lr = 2e-4
    beta1 = 0.5
    w_adv = 1.0
    w_con = 50.0
    w_lat = 1.0
    niter = 1


def l2_loss(input, target, size_average=True):
    if size_average:
        return torch.mean(torch.pow((input - target), 2))
    return torch.pow((input - target), 2)


class UnetGenerator(nn.Module):
    """Two-level U-Net with a skip connection, as define_G builds it (much smaller)."""

    def __init__(self, nc, ngf):
        super().__init__()
        self.down1 = nn.Sequential(nn.Conv2d(nc, ngf, 4, 2, 1), nn.LeakyReLU(0.2))
        self.down2 = nn.Sequential(nn.Conv2d(ngf, ngf * 2, 4, 2, 1), nn.BatchNorm2d(ngf * 2), nn.LeakyReLU(0.2))
        self.up2 = nn.Sequential(nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1), nn.BatchNorm2d(ngf), nn.ReLU())
        self.up1 = nn.Sequential(nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1), nn.Tanh())

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(d1)
        u2 = self.up2(d2)
        return self.up1(torch.cat([u2, d1], dim=1))


class BasicDiscriminator(nn.Module):
    def __init__(self, nc, ndf):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2),
        )
        self.classifier = nn.Sequential(nn.Conv2d(ndf * 2, 1, 4, 1, 0), nn.Sigmoid())

    def forward(self, x):
        features = self.features(x)
        classifier = self.classifier(features).view(-1, 1).squeeze(1)
        return classifier, features


class Skipganomaly:
    @property
    def name(self):
        return "skip-ganomaly"

    def __init__(self, opt):
        self.opt = opt
        self.netg = UnetGenerator(opt.nc, opt.ngf)
        self.netd = BasicDiscriminator(opt.nc, opt.ndf)

        self.l_adv = nn.BCELoss()
        self.l_con = nn.L1Loss()
        self.l_lat = l2_loss

        self.input = torch.empty(size=(opt.batchsize, opt.nc, opt.isize, opt.isize))
        self.noise = torch.empty(size=(opt.batchsize, opt.nc, opt.isize, opt.isize))
        self.real_label = torch.ones(size=(opt.batchsize,))
        self.fake_label = torch.zeros(size=(opt.batchsize,))

        self.netg.train()
        self.netd.train()
        self.optimizer_d = optim.Adam(self.netd.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
        self.optimizer_g = optim.Adam(self.netg.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

    def set_input(self, batch):
        with torch.no_grad():
            self.input.resize_(batch.size()).copy_(batch)
            self.noise.normal_(0, 0.1)

    def forward(self):
        self.forward_g()
        self.forward_d()

    def forward_g(self):
        self.fake = self.netg(self.input + self.noise)

    def forward_d(self):
        self.pred_real, self.feat_real = self.netd(self.input)
        self.pred_fake, self.feat_fake = self.netd(self.fake)

    def backward_g(self):
        self.err_g_adv = self.opt.w_adv * self.l_adv(self.pred_fake, self.real_label)
        self.err_g_con = self.opt.w_con * self.l_con(self.fake, self.input)
        self.err_g_lat = self.opt.w_lat * self.l_lat(self.feat_fake, self.feat_real)

        self.err_g = self.err_g_adv + self.err_g_con + self.err_g_lat
        self.err_g.backward(retain_graph=True)

    def backward_d(self):
        # Fake
        pred_fake, _ = self.netd(self.fake.detach())
        self.err_d_fake = self.l_adv(pred_fake, self.fake_label)

        # Real
        self.err_d_real = self.l_adv(self.pred_real, self.real_label)

        # Combine losses.
        self.err_d = self.err_d_real + self.err_d_fake + self.err_g_lat
        self.err_d.backward(retain_graph=True)

    def reinit_d(self):
        for m in self.netd.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.weight, 0.0, 0.02)
        print("   Reloading net d")

    def update_netg(self):
        self.optimizer_g.zero_grad()
        self.backward_g()
        self.optimizer_g.step()

    def update_netd(self):
        self.optimizer_d.zero_grad()
        self.backward_d()
        self.optimizer_d.step()
        if self.err_d < 1e-5:
            self.reinit_d()

    def optimize_params(self):
        self.forward()
        self.update_netg()
        self.update_netd()

    def train_one_epoch(self, batches, epoch):
        for i, batch in enumerate(batches):
            self.set_input(batch)
            self.optimize_params()
            if i % 2 == 0:
                print(
                    f"epoch {epoch} iter {i}: err_d {self.err_d.item():.4f} "
                    f"err_g {self.err_g.item():.4f} (adv {self.err_g_adv.item():.4f} "
                    f"con {self.err_g_con.item():.4f} lat {self.err_g_lat.item():.4f})"
                )

    def train(self, batches):
        for epoch in range(self.opt.niter):
            self.train_one_epoch(batches, epoch)


if __name__ == "__main__":
    opt = Options()
    # "normal" training images: smooth blobs
    grid = torch.linspace(-1, 1, opt.isize)
    yy, xx = torch.meshgrid(grid, grid, indexing="ij")
    normals = []
    for _ in range(4 * opt.batchsize):
        cx, cy = (torch.rand(2) - 0.5).tolist()
        blob = torch.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 0.2)
        normals.append(blob.expand(opt.nc, -1, -1) * 2 - 1 + 0.05 * torch.randn(opt.nc, opt.isize, opt.isize))
    data = torch.stack(normals)
    batches = list(data.split(opt.batchsize))

    model = Skipganomaly(opt)
    model.train(batches)
