"""Hearing-aid sound processing: a residual 1-D conv denoiser on log-mel frames.

Reduced from https://discuss.pytorch.org/t/in-place-operation-and-resnet/10724
The author wrote two residual units: one adds the residual branch into the
branch's own input in place (``residual = bn_1(conv_1(x)); x += residual``) and
fails with "one of the variables needed for gradient computation has been
modified by an inplace operation"; the other keeps the input under a separate
name. The reply: conv_1's backward needs the original ``x``, which ``x +=``
overwrote. Here the residual unit sits in a gain-mask denoiser for a hearing
aid's filterbank frames, trained to predict the clean frame from a noisy one.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

AUDIO = {"n_mels": 20, "frames": 32, "channels": 16, "blocks": 2}
TRAIN = {"batch": 8, "iters": 6, "lr": 1e-3, "snr_db": 5.0}


def synth_frames(batch, n_mels, frames, snr_db):
    """Clean speech-like log-mel frames (harmonic ridges) plus babble-like noise."""
    t = torch.linspace(0, 1, frames)
    pitch = 2 + 3 * torch.rand(batch, 1, 1)
    bands = torch.arange(n_mels).view(1, n_mels, 1).float()
    clean = torch.exp(-((bands - pitch * (1 + 0.3 * torch.sin(6.28 * t))) ** 2) / 4.0)
    noise_scale = 10 ** (-snr_db / 20)
    noisy = clean + noise_scale * torch.rand(batch, n_mels, frames)
    return noisy, clean


class ResidualUnit(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv_0 = nn.Conv1d(channels, channels, 3, padding=1, bias=False)
        self.bn_0 = nn.BatchNorm1d(channels)
        self.conv_1 = nn.Conv1d(channels, channels, 3, padding=1, bias=False)
        self.bn_1 = nn.BatchNorm1d(channels)

    def forward(self, x):
        x = self.conv_0(x)
        x = self.bn_0(x)
        x = F.relu(x, inplace=True)
        residual = self.conv_1(x)
        residual = self.bn_1(residual)
        x += residual
        x = F.relu(x, inplace=True)
        return x


class GainMaskDenoiser(nn.Module):
    def __init__(self, n_mels, channels, blocks):
        super().__init__()
        self.inp = nn.Conv1d(n_mels, channels, 1)
        self.blocks = nn.Sequential(*[ResidualUnit(channels) for _ in range(blocks)])
        self.mask = nn.Conv1d(channels, n_mels, 1)

    def forward(self, noisy):
        h = self.blocks(self.inp(noisy))
        return noisy * torch.sigmoid(self.mask(h))


def spectral_loss(enhanced, clean):
    return F.l1_loss(enhanced, clean) + 0.5 * F.mse_loss(torch.log1p(enhanced), torch.log1p(clean))


def fit(denoiser, opt):
    denoiser.train()
    for it in range(TRAIN["iters"]):
        noisy, clean = synth_frames(TRAIN["batch"], AUDIO["n_mels"], AUDIO["frames"], TRAIN["snr_db"])
        enhanced = denoiser(noisy)
        frame_loss = spectral_loss(enhanced, clean)
        opt.zero_grad()
        frame_loss.backward()
        opt.step()
        print(f"iter {it}: loss {frame_loss.item():.4f}")


if __name__ == "__main__":
    denoiser = GainMaskDenoiser(AUDIO["n_mels"], AUDIO["channels"], AUDIO["blocks"])
    opt = torch.optim.AdamW(denoiser.parameters(), lr=TRAIN["lr"])
    fit(denoiser, opt)
