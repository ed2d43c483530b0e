"""Exoplanet transit light-curve denoising with a conditional Wasserstein GAN.

Source: https://github.com/KupynOrest/DeblurGAN/pull/91
In DeblurGAN's ConditionalGAN model, ``forward()`` runs the generator once per batch
(``self.fake_B = self.netG.forward(self.real_A)``) and ``optimize_parameters()`` then
calls ``backward_D()`` ``criticUpdates`` times (5 for wgan-gp) on that same
``fake_B`` before ``backward_G()``. With newer PyTorch the second critic backward
raised "Trying to backward through the graph a second time"; the PR added
``retain_graph=True`` to the discriminator's backward.

Reduction: a 1-D generator cleans noisy photometric light curves (synthetic box-shaped
transits plus stellar noise), a critic scores (noisy, clean) pairs, and a trainer
class runs several critic updates per generator update on one generated batch.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

HPARAMS = dict(length=64, batch=12, n_batches=3, critic_updates=3, lr_g=2e-4, lr_d=2e-4,
               lambda_l1=10.0, clip=0.05)


def synth_light_curves(n, length):
    t = torch.linspace(0, 1, length)
    centers = torch.rand(n, 1) * 0.6 + 0.2
    depth = torch.rand(n, 1) * 0.02 + 0.005
    width = torch.rand(n, 1) * 0.05 + 0.03
    clean = 1.0 - depth * ((t[None] - centers).abs() < width).float()
    noisy = clean + 0.004 * torch.randn(n, length) + 0.003 * torch.sin(25 * t)[None]
    return noisy.unsqueeze(1), clean.unsqueeze(1)


class Denoiser(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(1, ch, 5, padding=2), nn.LeakyReLU(0.2),
            nn.Conv1d(ch, ch, 5, padding=2), nn.LeakyReLU(0.2),
            nn.Conv1d(ch, 1, 5, padding=2),
        )

    def forward(self, noisy):
        return noisy + self.body(noisy)


class Critic(nn.Module):
    def __init__(self, length, ch=16):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(2, ch, 5, stride=2, padding=2), nn.LeakyReLU(0.2),
            nn.Conv1d(ch, ch, 5, stride=2, padding=2), nn.LeakyReLU(0.2),
        )
        self.head = nn.Linear(ch * (length // 4), 1)

    def forward(self, noisy, curve):
        h = self.conv(torch.cat([noisy, curve], dim=1))
        return self.head(h.flatten(1))


class TransitGANTrainer:
    def __init__(self, hp):
        self.hp = hp
        self.generator = Denoiser()
        self.critic = Critic(hp["length"])
        self.opt_g = torch.optim.Adam(self.generator.parameters(), lr=hp["lr_g"], betas=(0.5, 0.999))
        self.opt_d = torch.optim.Adam(self.critic.parameters(), lr=hp["lr_d"], betas=(0.5, 0.999))

    def forward(self, noisy, clean):
        self.real_noisy = noisy
        self.real_clean = clean
        self.fake_clean = self.generator(noisy)

    def backward_critic(self):
        d_real = self.critic(self.real_noisy, self.real_clean).mean()
        d_fake = self.critic(self.real_noisy, self.fake_clean).mean()
        self.critic_loss = d_fake - d_real
        self.critic_loss.backward(retain_graph=True)

    def backward_generator(self):
        adv = -self.critic(self.real_noisy, self.fake_clean).mean()
        l1 = F.l1_loss(self.fake_clean, self.real_clean)
        self.gen_loss = adv + self.hp["lambda_l1"] * l1
        self.gen_loss.backward()

    def optimize_parameters(self, noisy, clean):
        self.forward(noisy, clean)
        for _ in range(self.hp["critic_updates"]):
            self.opt_d.zero_grad()
            self.backward_critic()
            self.opt_d.step()
            for p in self.critic.parameters():
                p.data.clamp_(-self.hp["clip"], self.hp["clip"])
        self.opt_g.zero_grad()
        self.backward_generator()
        self.opt_g.step()
        return self.critic_loss.item(), self.gen_loss.item()


def main():
    trainer = TransitGANTrainer(HPARAMS)
    data = [synth_light_curves(HPARAMS["batch"], HPARAMS["length"]) for _ in range(HPARAMS["n_batches"])]
    for epoch in range(2):
        for noisy, clean in data:
            d_loss, g_loss = trainer.optimize_parameters(noisy, clean)
        print(f"epoch {epoch}: critic {d_loss:.4f} generator {g_loss:.4f}")


if __name__ == "__main__":
    main()
