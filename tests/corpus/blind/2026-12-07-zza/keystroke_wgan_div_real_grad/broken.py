"""Synthetic keystroke sounds for acoustic keyboard-recognition augmentation, trained with WGAN-div.

Source: https://github.com/Lornatang/WassersteinGAN_DIV-PyTorch/issues/1 -- in the WGAN-div
critic step, ``torch.autograd.grad(outputs=real_outputs, inputs=real_data, ...)`` raises "One of
the differentiated Tensors appears to not have been used in the graph" when the tensor passed as
``inputs`` is not the one the critic actually consumed (with ``allow_unused=True`` the gradient is
just None). This script is a WGAN-div generator of log-mel keystroke clips (16 mel bands x 8
frames) used to augment a keyboard acoustic side-channel dataset: batches are normalised by a
data pipeline helper, then the raw batch is marked as requiring grad for the divergence term.
"""
import torch
import torch.nn as nn

cfg = {"mels": 16, "frames": 8, "z_dim": 12, "batch": 24, "k": 2.0, "p": 6.0, "lr": 1e-4, "n_critic": 2, "iters": 8}


class ClipGenerator(nn.Module):
    def __init__(self, z_dim, mels, frames):
        super().__init__()
        self.shape = (mels, frames)
        self.body = nn.Sequential(nn.Linear(z_dim, 64), nn.ReLU(), nn.Linear(64, mels * frames))

    def forward(self, z):
        return self.body(z).view(-1, 1, *self.shape)


class ClipCritic(nn.Module):
    def __init__(self, mels, frames):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(8 * mels * frames, 1)
        )

    def forward(self, x):
        return self.body(x)


class KeystrokeBank:
    """Stands in for recorded key presses: a click transient then a decaying release."""

    def __init__(self, n, mels, frames):
        t = torch.arange(frames).float()
        band = torch.linspace(0, 1, mels).unsqueeze(1)
        key_tone = torch.rand(n, 1, 1, 1)
        clip = torch.exp(-t / (1.5 + 2 * key_tone)) * (1 - (band - key_tone).abs())
        self.clips = torch.log1p(8 * clip + 0.05 * torch.rand(n, 1, mels, frames))
        self.mean, self.std = self.clips.mean(), self.clips.std()

    def batch(self, size):
        idx = torch.randint(0, len(self.clips), (size,))
        return self.clips[idx]

    def normalise(self, x):
        return (x - self.mean) / self.std


def div_term(out, inp, p):
    grad = torch.autograd.grad(out, inp, grad_outputs=torch.ones_like(out), create_graph=True, retain_graph=True)[0]
    return grad.flatten(1).norm(2, dim=1).pow(p)


def critic_step(critic, generator, bank, opt_d):
    raw = bank.batch(cfg["batch"])
    real = bank.normalise(raw)
    raw.requires_grad_(True)
    fake = generator(torch.randn(cfg["batch"], cfg["z_dim"])).detach().requires_grad_(True)
    real_out, fake_out = critic(real), critic(fake)
    div = (div_term(real_out, raw, cfg["p"]) + div_term(fake_out, fake, cfg["p"])).mean() * cfg["k"] / 2
    loss_d = fake_out.mean() - real_out.mean() + div
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()
    return loss_d.item()


def main():
    torch.manual_seed(8)
    bank = KeystrokeBank(256, cfg["mels"], cfg["frames"])
    generator = ClipGenerator(cfg["z_dim"], cfg["mels"], cfg["frames"])
    critic = ClipCritic(cfg["mels"], cfg["frames"])
    opt_g = torch.optim.Adam(generator.parameters(), lr=cfg["lr"], betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(critic.parameters(), lr=cfg["lr"], betas=(0.5, 0.999))
    for it in range(cfg["iters"]):
        d_val = critic_step(critic, generator, bank, opt_d)
        if (it + 1) % cfg["n_critic"] == 0:
            loss_g = -critic(generator(torch.randn(cfg["batch"], cfg["z_dim"]))).mean()
            opt_g.zero_grad()
            loss_g.backward()
            opt_g.step()
            print(f"iter {it}: D {d_val:.4f} G {loss_g.item():.4f}")


if __name__ == "__main__":
    main()
