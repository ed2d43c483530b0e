"""Leaf-stomata micrograph super-resolution with an SRGAN: the discriminator steps before G's loss.

Reduced from leftthomas/SRGAN issue #89, "RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.cuda.FloatTensor [1, 1024, 1, 1]] is
at version 2; expected version 1 instead" (https://github.com/leftthomas/SRGAN/issues/89).

The author ran the repository's train.py (SRGAN: residual generator with pixel-shuffle upsampling,
conv discriminator, GeneratorLoss of adversarial + image MSE + TV terms, one Adam per network).
Each batch computes ``fake_img = netG(z)``, then ``real_out`` and ``fake_out`` from netD,
``d_loss.backward(retain_graph=True)`` and ``optimizerD.step()``, and then builds
``g_loss = generator_criterion(fake_out, fake_img, real_img)`` from the *same* ``fake_out`` and calls
``g_loss.backward()``. On a recent PyTorch that backward fails with the in-place error: it goes
through netD's graph, whose saved weights ``optimizerD.step()`` has just updated in place. The
maintainer closed it as a duplicate of #84; the fix in the repository's train.py recomputes
``fake_img = netG(z)`` and ``fake_out = netD(fake_img).mean()`` after the discriminator's step ("The
two lines below are added to prevent runtime error"), so the generator is trained against the
updated discriminator.

Reduction: low-resolution epidermal-peel micrographs of leaves (stomata and pavement cells) are
super-resolved x2; a tiny generator and discriminator, GeneratorLoss with the same three terms, two
Adam optimizers and the report's loop order.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(89)

HPARAMS = {
    "upscale": 2,
    "crop": 16,
    "batch_size": 4,
    "batches_per_epoch": 3,
    "num_epochs": 2,
}


class ResidualBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x):
        return x + self.conv2(F.prelu(self.conv1(x), torch.tensor([0.25])))


class Generator(nn.Module):
    def __init__(self, scale, ch=16):
        super().__init__()
        self.head = nn.Conv2d(1, ch, 5, padding=2)
        self.body = ResidualBlock(ch)
        self.up = nn.Conv2d(ch, ch * scale * scale, 3, padding=1)
        self.shuffle = nn.PixelShuffle(scale)
        self.tail = nn.Conv2d(ch, 1, 5, padding=2)

    def forward(self, x):
        h = F.relu(self.head(x))
        h = self.body(h)
        h = F.relu(self.shuffle(self.up(h)))
        return (torch.tanh(self.tail(h)) + 1) / 2


class Discriminator(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, ch, 3, padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(ch, ch * 2, 3, stride=2, padding=1), nn.BatchNorm2d(ch * 2), nn.LeakyReLU(0.2),
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(ch * 2, ch * 4, 1), nn.LeakyReLU(0.2),
            nn.Conv2d(ch * 4, 1, 1),
        )

    def forward(self, x):
        return torch.sigmoid(self.net(x).view(x.size(0)))


class TVLoss(nn.Module):
    def forward(self, x):
        h_tv = (x[:, :, 1:, :] - x[:, :, :-1, :]).pow(2).mean()
        w_tv = (x[:, :, :, 1:] - x[:, :, :, :-1]).pow(2).mean()
        return h_tv + w_tv


class GeneratorLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.mse_loss = nn.MSELoss()
        self.tv_loss = TVLoss()

    def forward(self, out_labels, out_images, target_images):
        adversarial_loss = torch.mean(1 - out_labels)
        image_loss = self.mse_loss(out_images, target_images)
        tv_loss = self.tv_loss(out_images)
        return image_loss + 0.001 * adversarial_loss + 2e-8 * tv_loss


def make_stomata_batches(n, batch_size, crop, scale):
    """Synthetic epidermal peels: bright pavement cells with dark elliptical stomatal pores."""
    batches = []
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, crop), torch.linspace(-1, 1, crop), indexing="ij")
    for _ in range(n):
        centres = torch.rand(batch_size, 2) * 1.2 - 0.6
        hr = 0.7 + 0.1 * torch.rand(batch_size, 1, crop, crop)
        pore = ((xx - centres[:, 0, None, None]) ** 2 / 0.08 + (yy - centres[:, 1, None, None]) ** 2 / 0.03) < 1
        hr = torch.where(pore[:, None], hr * 0.2, hr)
        lr = F.avg_pool2d(hr, scale)
        batches.append((lr, hr))
    return batches


def main():
    hp = HPARAMS
    train_loader = make_stomata_batches(hp["batches_per_epoch"], hp["batch_size"], hp["crop"], hp["upscale"])
    netG = Generator(hp["upscale"])
    netD = Discriminator()
    generator_criterion = GeneratorLoss()
    optimizerG = torch.optim.Adam(netG.parameters())
    optimizerD = torch.optim.Adam(netD.parameters())

    for epoch in range(1, hp["num_epochs"] + 1):
        running = {"d_loss": 0.0, "g_loss": 0.0}
        netG.train()
        netD.train()
        for data, target in train_loader:
            real_img = target
            z = data
            fake_img = netG(z)

            # (1) Update D network: maximize D(x) - 1 - D(G(z))
            netD.zero_grad()
            real_out = netD(real_img).mean()
            fake_out = netD(fake_img).mean()
            d_loss = 1 - real_out + fake_out
            d_loss.backward(retain_graph=True)
            optimizerD.step()

            # (2) Update G network: minimize 1 - D(G(z)) + image loss + TV loss
            netG.zero_grad()
            fake_img = netG(z)
            fake_out = netD(fake_img).mean()
            g_loss = generator_criterion(fake_out, fake_img, real_img)
            g_loss.backward()
            optimizerG.step()

            running["d_loss"] += d_loss.item()
            running["g_loss"] += g_loss.item()
        print(f"[{epoch}/{hp['num_epochs']}] Loss_D {running['d_loss']:.4f} Loss_G {running['g_loss']:.4f}")


if __name__ == "__main__":
    main()
