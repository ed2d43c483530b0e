"""Multimodal calligraphy rendering: stroke skeleton -> brushed glyph, BicycleGAN style.

Source: https://github.com/junyanz/BicycleGAN/issues/81 -- a reader asks why ``backward_EG``
ends with ``loss_G.backward(retain_graph=True)``; removing it raised no error for them with
lambda_z = 0, and the maintainer answers that it breaks in ``backward_G_alone`` (the latent
regression loss that updates G alone, from ``mu2 = E(fake_B_random)`` computed in the forward)
when that term is on. This script is that training step for calligraphy: a generator turns a
skeleton glyph plus a style code into a brushed glyph, an encoder recovers the style code, a
discriminator judges (skeleton, glyph) pairs, and the step has two phases over one forward:
encoder+generator losses first, then the latent-regression loss for the generator alone,
without keeping the graph after the first phase.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

HP = dict(size=16, z_dim=4, batch=8, lr=2e-4, lambda_l1=10.0, lambda_kl=0.01, lambda_z=0.5, iters=5)


def mlp(inp, out, hidden=64):
    return nn.Sequential(nn.Linear(inp, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, out))


class BrushGenerator(nn.Module):
    def __init__(self, size, z_dim):
        super().__init__()
        self.size = size
        self.net = mlp(size * size + z_dim, size * size, hidden=96)

    def forward(self, skeleton, z):
        x = torch.cat([skeleton.flatten(1), z], dim=1)
        return torch.tanh(self.net(x)).view(-1, 1, self.size, self.size)


class StyleEncoder(nn.Module):
    def __init__(self, size, z_dim):
        super().__init__()
        self.net = mlp(size * size, 2 * z_dim)

    def forward(self, glyph):
        mu, logvar = self.net(glyph.flatten(1)).chunk(2, dim=1)
        return mu, logvar


class PairCritic(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.net = mlp(2 * size * size, 1)

    def forward(self, skeleton, glyph):
        return self.net(torch.cat([skeleton.flatten(1), glyph.flatten(1)], dim=1))


def set_requires_grad(module, flag):
    for p in module.parameters():
        p.requires_grad_(flag)


def gan_loss(logits, real):
    target = torch.ones_like(logits) if real else torch.zeros_like(logits)
    return F.binary_cross_entropy_with_logits(logits, target)


def ink_batch(batch, size):
    skeleton = (torch.rand(batch, 1, size, size) > 0.8).float() * 2 - 1
    blur = F.avg_pool2d(F.pad(skeleton, (1, 1, 1, 1), value=-1.0), 3, stride=1)
    brushed = torch.tanh(2.5 * blur + 0.8 + 0.1 * torch.randn_like(blur))
    return skeleton, brushed


def main():
    torch.manual_seed(3)
    gen, enc, disc = BrushGenerator(HP["size"], HP["z_dim"]), StyleEncoder(HP["size"], HP["z_dim"]), PairCritic(HP["size"])
    opt_g = torch.optim.Adam(gen.parameters(), lr=HP["lr"], betas=(0.5, 0.999))
    opt_e = torch.optim.Adam(enc.parameters(), lr=HP["lr"], betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), lr=HP["lr"], betas=(0.5, 0.999))

    for it in range(HP["iters"]):
        skeleton, real = ink_batch(HP["batch"], HP["size"])
        # forward shared by both phases
        mu, logvar = enc(real)
        z_enc = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        fake_enc = gen(skeleton, z_enc)
        z_random = torch.randn(HP["batch"], HP["z_dim"])
        fake_random = gen(skeleton, z_random)
        mu2, _ = enc(fake_random)

        opt_d.zero_grad()
        loss_d = (
            gan_loss(disc(skeleton, fake_enc.detach()), False)
            + gan_loss(disc(skeleton, fake_random.detach()), False)
            + 2 * gan_loss(disc(skeleton, real), True)
        )
        loss_d.backward()
        opt_d.step()

        set_requires_grad(disc, False)
        opt_e.zero_grad()
        opt_g.zero_grad()
        loss_gan = gan_loss(disc(skeleton, fake_enc), True) + gan_loss(disc(skeleton, fake_random), True)
        loss_l1 = F.l1_loss(fake_enc, real) * HP["lambda_l1"]
        loss_kl = -0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp()) * HP["lambda_kl"]
        loss_eg = loss_gan + loss_l1 + loss_kl
        loss_eg.backward()

        set_requires_grad(enc, False)
        loss_z = F.l1_loss(mu2, z_random) * HP["lambda_z"]
        loss_z.backward()
        set_requires_grad(enc, True)

        opt_e.step()
        opt_g.step()
        set_requires_grad(disc, True)
        print(f"iter {it}: D {loss_d.item():.3f} EG {loss_eg.item():.3f} z {loss_z.item():.3f}")


if __name__ == "__main__":
    main()
