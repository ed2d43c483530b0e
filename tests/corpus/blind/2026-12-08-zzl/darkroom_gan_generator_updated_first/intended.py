"""Low-light photo enhancement GAN trained generator-first, corrected: the discriminator scores detached fakes.

Source: Stack Overflow question "How does PyTorch's loss.backward() work when
"retain_graph=True" is specified?", read through its mirror
https://whosebug.com/question/5232549/How-does-PyTorch-s-loss-backward-work-when-retain-graph-True-is-specified

The asker trains a GAN in which, as their task requires, the generator is updated first
and the discriminator second, in one iteration:

    # computing loss_g and loss_d...
    optim_g.zero_grad(); loss_g.backward(); optim_g.step()
    optim_d.zero_grad(); loss_d.backward(); optim_d.step()

and gets "RuntimeError: Trying to backward through the graph a second time, but the
buffers have already been freed. Specify retain_graph=True ...". Adding
`retain_graph=True` to `loss_g.backward()` silences it, and they ask why it is needed for
two networks. The accepted answer: both losses are built on the generator's output, so
`loss_d` backpropagates through the generator's graph, which `loss_g.backward()` already
freed; in an adversarial setting the discriminator's loss must not adjust the generator,
so the fake images must be detached when computing the discriminator loss
(`D(fake.detach())`); `retain_graph=True` only hides the mistake.

Reduction: a darkroom-style enhancement GAN on synthetic 3x16x16 patches (underexposed
input, well-exposed reference): a small conv generator predicts a residual brightening,
a patch discriminator scores realism; the generator loss is adversarial + L1 to the
reference. Both losses are computed from one generator forward, then the generator is
stepped first and the discriminator second; as the answer says, the discriminator loss
is computed on `fake.detach()`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "epochs": 2,
    "batches_per_epoch": 4,
    "batch_size": 8,
    "lr_g": 2e-4,
    "lr_d": 2e-4,
    "l1_weight": 10.0,
}


def make_darkroom_batch(batch_size):
    """Well-exposed reference patches and their underexposed, noisy captures."""
    reference = torch.rand(batch_size, 3, 16, 16) * 0.6 + 0.3
    exposure = torch.rand(batch_size, 1, 1, 1) * 0.3 + 0.15
    dark = reference * exposure + 0.02 * torch.randn(batch_size, 3, 16, 16)
    return dark.clamp(0, 1), reference


class Enhancer(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, ch, 3, padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(ch, ch, 3, padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(ch, 3, 3, padding=1),
        )

    def forward(self, x):
        return torch.sigmoid(self.net(x) + torch.logit(x.clamp(0.01, 0.99)))


class PatchCritic(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, ch, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(ch, ch * 2, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(ch * 2, 1, 3, padding=1),
        )

    def forward(self, x):
        return self.net(x)


def main():
    torch.manual_seed(7)
    hp = HPARAMS
    G = Enhancer()
    D = PatchCritic()
    optim_g = torch.optim.Adam(G.parameters(), lr=hp["lr_g"], betas=(0.5, 0.999))
    optim_d = torch.optim.Adam(D.parameters(), lr=hp["lr_d"], betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()

    for epoch in range(hp["epochs"]):
        for it in range(hp["batches_per_epoch"]):
            dark, reference = make_darkroom_batch(hp["batch_size"])

            # computing loss_g and loss_d...
            fake = G(dark)
            pred_fake = D(fake)
            loss_g = bce(pred_fake, torch.ones_like(pred_fake)) + hp["l1_weight"] * F.l1_loss(fake, reference)

            pred_real = D(reference)
            pred_fake_d = D(fake.detach())  # the discriminator must not adjust the generator
            loss_d = 0.5 * (bce(pred_real, torch.ones_like(pred_real))
                            + bce(pred_fake_d, torch.zeros_like(pred_fake_d)))

            optim_g.zero_grad()
            loss_g.backward()
            optim_g.step()

            optim_d.zero_grad()
            loss_d.backward()
            optim_d.step()

            print(f"epoch {epoch} it {it} loss_g {loss_g.item():.4f} loss_d {loss_d.item():.4f}")


if __name__ == "__main__":
    main()
