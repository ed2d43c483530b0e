"""Cross-stitch pattern generation with a swapping autoencoder (chart structure x thread palette).

Source: https://github.com/rosinality/swapping-autoencoder-pytorch/issues/12

The report: a reader of rosinality's swapping-autoencoder training code asked why the encoder and
generator forward (structure1, texture1 = encoder(img1); fake1 = generator(structure1, texture1);
fake2 = generator(structure1, texture2)) runs twice per iteration, once before the discriminator's
update and once before the generator's. The maintainer answered that the first graph can be reused
instead, by passing retain_graph=True to the first backward.

Reduction: a trainer for cross-stitch charts (a stitch-colour grid) that runs the encoder and the
generator once per step and uses the reconstructed and palette-swapped charts in both phases: the
critic's update first, then the encoder/generator update on the same forward.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

GRID = 16  # stitches per side
PALETTE = 3  # RGB floss colour per stitch
HP = {"batch": 8, "lr_g": 2e-3, "lr_d": 2e-3, "iters": 5, "rec_weight": 1.0, "adv_weight": 0.1}


class ChartEncoder(nn.Module):
    """Splits a chart into a spatial structure code and a global thread-palette code."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(PALETTE, 16, 3, padding=1), nn.LeakyReLU(0.2))
        self.to_structure = nn.Conv2d(16, 4, 3, stride=2, padding=1)
        self.to_texture = nn.Linear(16, 12)

    def forward(self, chart):
        h = self.stem(chart)
        structure = self.to_structure(h)
        texture = self.to_texture(h.mean(dim=(2, 3)))
        return structure, texture


class StitchGenerator(nn.Module):
    def __init__(self):
        super().__init__()
        self.mod = nn.Linear(12, 4)
        self.up = nn.Sequential(
            nn.ConvTranspose2d(4, 16, 4, stride=2, padding=1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(16, PALETTE, 3, padding=1),
        )

    def forward(self, structure, texture):
        scale = 1.0 + self.mod(texture)[:, :, None, None]
        return torch.tanh(self.up(structure * scale))


class ChartCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(PALETTE, 16, 3, stride=2, padding=1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(16, 32, 3, stride=2, padding=1),
            nn.LeakyReLU(0.2),
            nn.Flatten(),
            nn.Linear(32 * 4 * 4, 1),
        )

    def forward(self, chart):
        return self.net(chart)


def set_requires_grad(module, flag):
    for p in module.parameters():
        p.requires_grad_(flag)


def sample_charts(n):
    """Blocky motifs: a coarse random colour grid upsampled to stitch resolution."""
    coarse = torch.rand(n, PALETTE, 4, 4) * 2 - 1
    return F.interpolate(coarse, size=(GRID, GRID), mode="nearest")


encoder = ChartEncoder()
generator = StitchGenerator()
critic = ChartCritic()
g_optim = torch.optim.Adam(list(encoder.parameters()) + list(generator.parameters()), lr=HP["lr_g"], betas=(0.0, 0.99))
d_optim = torch.optim.Adam(critic.parameters(), lr=HP["lr_d"], betas=(0.0, 0.99))


def train_iteration(real1, real2):
    structure1, texture1 = encoder(real1)
    _, texture2 = encoder(real2)
    recon = generator(structure1, texture1)
    swapped = generator(structure1, texture2)

    set_requires_grad(critic, True)
    fake_pred = critic(torch.cat([recon, swapped]))
    real_pred = critic(real1)
    d_loss = F.softplus(fake_pred).mean() + F.softplus(-real_pred).mean()
    d_optim.zero_grad()
    d_loss.backward()
    d_optim.step()

    set_requires_grad(critic, False)
    structure1, texture1 = encoder(real1)
    _, texture2 = encoder(real2)
    recon = generator(structure1, texture1)
    swapped = generator(structure1, texture2)
    rec_loss = F.l1_loss(recon, real1)
    adv_loss = F.softplus(-critic(torch.cat([recon, swapped]))).mean()
    g_loss = HP["rec_weight"] * rec_loss + HP["adv_weight"] * adv_loss
    g_optim.zero_grad()
    g_loss.backward()
    g_optim.step()
    return d_loss.item(), g_loss.item()


for it in range(HP["iters"]):
    real1 = sample_charts(HP["batch"])
    real2 = sample_charts(HP["batch"])
    d_val, g_val = train_iteration(real1, real2)
    print(f"iter {it} d {d_val:.4f} g {g_val:.4f}")
