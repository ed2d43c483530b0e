"""A small StyleGAN2 (mapping network, modulated/demodulated convolutions, noise inputs)
trained with the non-saturating logistic loss, lazy R1 on the discriminator and lazy
path-length regularisation on the generator.

Report: https://github.com/rosinality/stylegan2-pytorch/issues/32 -- the author was writing
their own StyleGAN2 in PyTorch ("the overall framework is basically completed") and ported
``g_path_regularize``; their path penalty had no ``grad_fn`` and could not be
back-propagated, because their ``torch.autograd.grad`` call for the Jacobian-vector
product did not pass ``create_graph=True``: the gradient, and the penalty built from it,
came out as constants.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

LATENT, RES, BATCH = 16, 8, 8
G_REG_EVERY, D_REG_EVERY, PATH_WEIGHT, R1_GAMMA = 2, 4, 2.0, 10.0


class ModulatedConv(nn.Module):
    def __init__(self, cin, cout, k, style_dim, demodulate=True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(1, cout, cin, k, k))
        self.scale = 1 / math.sqrt(cin * k * k)
        self.affine = nn.Linear(style_dim, cin)
        nn.init.ones_(self.affine.bias)
        self.demodulate, self.pad = demodulate, k // 2

    def forward(self, x, w):
        b, cin, h, wd = x.shape
        style = self.affine(w).view(b, 1, cin, 1, 1)
        weight = self.scale * self.weight * style
        if self.demodulate:
            demod = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
            weight = weight * demod.view(b, -1, 1, 1, 1)
        weight = weight.view(-1, cin, *weight.shape[3:])
        out = F.conv2d(x.view(1, b * cin, h, wd), weight, padding=self.pad, groups=b)
        return out.view(b, -1, h, wd)


class StyledLayer(nn.Module):
    def __init__(self, cin, cout, style_dim):
        super().__init__()
        self.conv = ModulatedConv(cin, cout, 3, style_dim)
        self.noise_strength = nn.Parameter(torch.zeros(1))
        self.bias = nn.Parameter(torch.zeros(1, cout, 1, 1))

    def forward(self, x, w):
        out = self.conv(x, w)
        noise = torch.randn(out.shape[0], 1, *out.shape[2:])
        return F.leaky_relu(out + self.noise_strength * noise + self.bias, 0.2) * math.sqrt(2)


class Generator(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        layers = []
        for _ in range(3):
            layers += [nn.Linear(LATENT, LATENT), nn.LeakyReLU(0.2)]
        self.mapping = nn.Sequential(*layers)
        self.const = nn.Parameter(torch.randn(1, ch, 4, 4))
        self.conv1 = StyledLayer(ch, ch, LATENT)
        self.conv2 = StyledLayer(ch, ch, LATENT)
        self.to_rgb = ModulatedConv(ch, 3, 1, LATENT, demodulate=False)

    def forward(self, z, return_latents=False):
        w = self.mapping(F.normalize(z, dim=1) * math.sqrt(LATENT))
        latent = w.unsqueeze(1).repeat(1, 3, 1)  # one w per layer, as StyleGAN2 broadcasts it
        x = self.const.repeat(z.shape[0], 1, 1, 1)
        x = self.conv1(x, latent[:, 0])
        x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        x = self.conv2(x, latent[:, 1])
        img = self.to_rgb(x, latent[:, 2])
        return (img, latent) if return_latents else (img, None)


class Discriminator(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, ch, 3, padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(ch, ch * 2, 3, stride=2, padding=1), nn.LeakyReLU(0.2),
        )
        self.head = nn.Linear(ch * 2 * 4 * 4, 1)

    def forward(self, x):
        return self.head(self.body(x).flatten(1))


def requires_grad(model, flag):
    for p in model.parameters():
        p.requires_grad = flag


def d_r1_loss(real_pred, real_img):
    grad_real, = torch.autograd.grad(real_pred.sum(), real_img, create_graph=True)
    return grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()


def g_path_regularize(fake_img, latents, mean_path_length, decay=0.01):
    noise = torch.randn_like(fake_img) / math.sqrt(fake_img.shape[2] * fake_img.shape[3])
    grad, = torch.autograd.grad((fake_img * noise).sum(), latents, create_graph=True)
    path_lengths = torch.sqrt(grad.pow(2).sum(2).mean(1))
    path_mean = mean_path_length + decay * (path_lengths.mean() - mean_path_length)
    path_penalty = (path_lengths - path_mean).pow(2).mean()
    return path_penalty, path_mean.detach(), path_lengths


def real_batch():
    """Synthetic 'images': smooth colour gradients with a random blob."""
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, RES), torch.linspace(-1, 1, RES), indexing="ij")
    c = torch.rand(BATCH, 3, 1, 1) * 2 - 1
    centre = torch.rand(BATCH, 2, 1, 1) * 1.2 - 0.6
    blob = torch.exp(-((xx - centre[:, :1]) ** 2 + (yy - centre[:, 1:]) ** 2) / 0.1)
    return torch.tanh(c * (xx + yy) / 2 + blob.expand(-1, 3, -1, -1) - 0.5)


generator, discriminator = Generator(), Discriminator()
g_optim = torch.optim.Adam(generator.parameters(), lr=2e-3, betas=(0.0, 0.99))
d_optim = torch.optim.Adam(discriminator.parameters(), lr=2e-3, betas=(0.0, 0.99))
mean_path_length = 0.0

for i in range(10):
    real_img = real_batch()

    requires_grad(generator, False)
    requires_grad(discriminator, True)
    fake_img, _ = generator(torch.randn(BATCH, LATENT))
    d_loss = F.softplus(discriminator(fake_img)).mean() + F.softplus(-discriminator(real_img)).mean()
    discriminator.zero_grad()
    d_loss.backward()
    d_optim.step()

    if i % D_REG_EVERY == 0:
        real_img.requires_grad = True
        real_pred = discriminator(real_img)
        r1_loss = d_r1_loss(real_pred, real_img)
        discriminator.zero_grad()
        d_reg_loss = R1_GAMMA / 2 * r1_loss * D_REG_EVERY + 0 * real_pred[0, 0]
        d_reg_loss.backward()
        d_optim.step()

    requires_grad(generator, True)
    requires_grad(discriminator, False)
    fake_img, _ = generator(torch.randn(BATCH, LATENT))
    g_loss = F.softplus(-discriminator(fake_img)).mean()
    generator.zero_grad()
    g_loss.backward()
    g_optim.step()

    if i % G_REG_EVERY == 0:
        fake_img, latents = generator(torch.randn(BATCH // 2, LATENT), return_latents=True)
        path_loss, mean_path_length, path_lengths = g_path_regularize(fake_img, latents, mean_path_length)
        generator.zero_grad()
        weighted_path_loss = PATH_WEIGHT * G_REG_EVERY * path_loss
        weighted_path_loss.backward()
        g_optim.step()

    if i % 3 == 0:
        print(f"{i}: d {d_loss.item():.3f} g {g_loss.item():.3f} pl {mean_path_length.item():.3f}")
