"""Organ pipe voicing: an AdvGAN-style generator that proposes small spectrum adjustments, with several generator steps per batch.

Source: https://github.com/GiorgosKarantonis/Adversarial-Attacks-with-Relativistic-AdvGAN/issues/8

The report: in the relativistic AdvGAN training loop, setting ``n_steps_G`` above 1 failed.
Adding ``retain_graph=True`` to ``loss_G.backward()`` only changed the error to "one of
the variables needed for gradient computation has been modified by an inplace
operation: [torch.cuda.FloatTensor [8, 3, 6, 6]] is at version 2; expected version 1":
the perturbation was made once per batch, before the generator loop, and every
generator step backpropagated through that same forward after the optimizer had updated
the generator's weights in place. The reporter's own fix was to make the perturbation
(and the clamped adversarial input) again inside the generator loop.

The setting here is the writer's: a voicer's assistant learns small corrections to an
organ pipe's harmonic spectrum (the effect of nicking, cut-up and languid adjustments)
so that a frozen register classifier hears the pipe as the target register, while a
discriminator keeps the corrected spectra looking like real voiced pipes. The generator
takes two steps per batch.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

cfg = {
    "harmonics": 16,
    "registers": 3,         # principal, flute, string
    "bound": 0.15,          # largest correction per harmonic (log amplitude)
    "batch": 24,
    "batches": 4,
    "n_steps_D": 1,
    "n_steps_G": 2,
    "adv_weight": 1.0,
    "pert_weight": 2.0,
    "lr_G": 1e-3,
    "lr_D": 1e-3,
}


def pipe_spectra(n, harmonics, registers, gen):
    """Log-amplitude harmonic spectra: principals balanced, flutes fundamental-heavy, strings bright."""
    k = torch.arange(1, harmonics + 1).float()
    register = torch.randint(0, registers, (n,), generator=gen)
    slope = torch.tensor([1.0, 2.2, 0.5])[register].unsqueeze(1)
    spectra = -slope * torch.log(k) + 0.1 * torch.randn(n, harmonics, generator=gen)
    return spectra, register


class RegisterClassifier(nn.Module):
    def __init__(self, harmonics, registers):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(harmonics, 32), nn.ReLU(), nn.Linear(32, registers))

    def forward(self, s):
        return self.net(s)


class VoicingGenerator(nn.Module):
    def __init__(self, harmonics):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(harmonics, 32), nn.Tanh(), nn.Linear(32, harmonics))

    def forward(self, s):
        return self.net(s)


class SpectrumCritic(nn.Module):
    def __init__(self, harmonics):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(harmonics, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, s):
        return self.net(s)


def corrected(spectra, correction, bound):
    return spectra + torch.clamp(correction, -bound, bound)


def main():
    torch.manual_seed(5)
    gen = torch.Generator().manual_seed(5)
    H, R = cfg["harmonics"], cfg["registers"]

    classifier = RegisterClassifier(H, R)
    for p in classifier.parameters():
        p.requires_grad_(False)
    classifier.eval()

    netG = VoicingGenerator(H)
    netD = SpectrumCritic(H)
    optimizer_G = torch.optim.Adam(netG.parameters(), lr=cfg["lr_G"])
    optimizer_D = torch.optim.Adam(netD.parameters(), lr=cfg["lr_D"])

    for batch_idx in range(cfg["batches"]):
        spectra, register = pipe_spectra(cfg["batch"], H, R, gen)
        target = (register + 1) % R

        correction = netG(spectra)
        voiced = corrected(spectra, correction, cfg["bound"])

        for _ in range(cfg["n_steps_D"]):
            optimizer_D.zero_grad()
            real_score = netD(spectra)
            fake_score = netD(voiced.detach())
            loss_D = F.binary_cross_entropy_with_logits(real_score - fake_score.mean(), torch.ones_like(real_score)) \
                + F.binary_cross_entropy_with_logits(fake_score - real_score.mean(), torch.zeros_like(fake_score))
            loss_D.backward()
            optimizer_D.step()

        for _ in range(cfg["n_steps_G"]):
            optimizer_G.zero_grad()
            real_score = netD(spectra)
            fake_score = netD(voiced)
            loss_G_gan = F.binary_cross_entropy_with_logits(fake_score - real_score.mean(), torch.ones_like(fake_score))
            loss_adv = F.cross_entropy(classifier(voiced), target)
            loss_pert = correction.pow(2).mean()
            loss_G = loss_G_gan + cfg["adv_weight"] * loss_adv + cfg["pert_weight"] * loss_pert
            loss_G.backward(retain_graph=True)
            optimizer_G.step()

        print(f"batch {batch_idx}: loss_D {loss_D.item():.4f} loss_G {loss_G.item():.4f}")


if __name__ == "__main__":
    main()
