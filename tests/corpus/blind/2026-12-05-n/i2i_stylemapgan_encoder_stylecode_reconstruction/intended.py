"""StyleMapGAN-style training: a generator with a spatial stylecode, an encoder that maps images back
to stylecodes (for image-to-image editing), and a discriminator, each with its own Adam optimizer.

Reduced from https://github.com/naver-ai/StyleMapGAN/issues/16 (train.py around the
`(w_rec_loss * args.lambda_w_rec_loss).backward()` line): one `Model` module whose forward
takes a mode ("G" or "D") and returns that phase's losses; the loop updates the generator
with the adversarial loss, the encoder with the stylecode reconstruction loss, then the
discriminator. Synthetic 16x16 images, CPU.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Args:
    batch = 2
    latent_dim = 16
    latent_channel_size = 4
    lambda_adv_loss = 1.0
    lambda_w_rec_loss = 1.0
    lambda_d_loss = 1.0
    lambda_indomainGAN_D_loss = 1.0
    lr = 2e-3
    iters = 4


def make_noise(batch, latent_dim):
    return torch.randn(batch, latent_dim)


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def g_nonsaturating_loss(fake_pred):
    return F.softplus(-fake_pred).mean()


def d_logistic_loss(real_pred, fake_pred):
    return F.softplus(-real_pred).mean() + F.softplus(fake_pred).mean()


class Generator(nn.Module):
    def __init__(self, latent_dim, c):
        super().__init__()
        self.c = c
        self.mapping = nn.Sequential(nn.Linear(latent_dim, 32), nn.LeakyReLU(0.2), nn.Linear(32, c * 4 * 4))
        self.synthesis = nn.Sequential(
            nn.Upsample(scale_factor=2),
            nn.Conv2d(c, 8, 3, padding=1),
            nn.LeakyReLU(0.2),
            nn.Upsample(scale_factor=2),
            nn.Conv2d(8, 3, 3, padding=1),
        )

    def forward(self, z, return_stylecode=False, input_is_stylecode=False):
        stylecode = z if input_is_stylecode else self.mapping(z).view(-1, self.c, 4, 4)
        img = torch.tanh(self.synthesis(stylecode))
        return img, stylecode


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(8, c, 3, stride=2, padding=1)
        )

    def forward(self, img):
        return self.net(img)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(8 * 8 * 8, 1)
        )

    def forward(self, img):
        return self.net(img)


class Model(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.generator = Generator(args.latent_dim, args.latent_channel_size)
        self.encoder = Encoder(args.latent_channel_size)
        self.discriminator = Discriminator()

    def forward(self, real_img, mode):
        if mode == "G":
            z = make_noise(self.args.batch, self.args.latent_dim)
            fake_img, stylecode = self.generator(z, return_stylecode=True)
            fake_pred = self.discriminator(fake_img)
            adv_loss = g_nonsaturating_loss(fake_pred)
            fake_img = fake_img.detach()
            stylecode = stylecode.detach()
            fake_stylecode = self.encoder(fake_img)
            w_rec_loss = F.mse_loss(stylecode, fake_stylecode)
            return adv_loss, w_rec_loss, stylecode
        elif mode == "D":
            with torch.no_grad():
                z = make_noise(self.args.batch, self.args.latent_dim)
                fake_img, _ = self.generator(z)
                fake_stylecode = self.encoder(real_img)
                fake_img_from_E, _ = self.generator(fake_stylecode, input_is_stylecode=True)
            real_pred = self.discriminator(real_img)
            fake_pred = self.discriminator(fake_img)
            d_loss = d_logistic_loss(real_pred, fake_pred)
            fake_pred_from_E = self.discriminator(fake_img_from_E)
            indomainGAN_D_loss = F.softplus(fake_pred_from_E).mean()
            return d_loss, indomainGAN_D_loss, real_pred, fake_pred


def sample_data(args):
    while True:
        base = torch.linspace(-1, 1, 16)
        grad = base.view(1, 1, 1, 16) * torch.rand(args.batch, 3, 1, 1)
        yield (grad + 0.1 * torch.randn(args.batch, 3, 16, 16)).clamp(-1, 1)


def train(args, loader, model, g_optim, e_optim, d_optim):
    for i in range(args.iters):
        real_img = next(loader)

        requires_grad(model.discriminator, False)
        adv_loss, w_rec_loss, stylecode = model(None, "G")
        adv_loss = adv_loss.mean()

        with torch.no_grad():
            latent_std = stylecode.std().mean().item()

        g_loss = adv_loss * args.lambda_adv_loss
        g_loss_val = g_loss.item()

        g_optim.zero_grad()
        g_loss.backward()
        g_optim.step()

        w_rec_loss = w_rec_loss.mean()
        w_rec_loss_val = w_rec_loss.item()
        e_optim.zero_grad()
        (w_rec_loss * args.lambda_w_rec_loss).backward()
        e_optim.step()

        requires_grad(model.discriminator, True)
        d_loss, indomainGAN_D_loss, real_score, fake_score = model(real_img, "D")
        d_loss = d_loss.mean()
        indomainGAN_D_loss = indomainGAN_D_loss.mean()

        d_optim.zero_grad()
        (d_loss * args.lambda_d_loss + indomainGAN_D_loss * args.lambda_indomainGAN_D_loss).backward()
        d_optim.step()

        print(f"iter {i}: g {g_loss_val:.4f} w_rec {w_rec_loss_val:.4f} d {d_loss.item():.4f} std {latent_std:.3f}")


if __name__ == "__main__":
    args = Args()
    model = Model(args)
    g_module = model.generator
    e_module = model.encoder
    d_module = model.discriminator
    g_optim = torch.optim.Adam(g_module.parameters(), lr=args.lr, betas=(0.0, 0.99))
    e_optim = torch.optim.Adam(e_module.parameters(), lr=args.lr, betas=(0.0, 0.99))
    d_optim = torch.optim.Adam(d_module.parameters(), lr=args.lr, betas=(0.0, 0.99))
    train(args, sample_data(args), model, g_optim, e_optim, d_optim)
