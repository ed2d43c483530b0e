"""Handbell tuning: predict the cents offsets of a cast bell's five partials from its strike spectrum.

Source: https://github.com/pytorch/pytorch/issues/5687 ("ReLU(inplace=True) seems something wrong internal").
The author trained a content-weighted image-compression CNN built from residual blocks whose ``left`` branch
was ``nn.Sequential(conv, ReLU(inplace=True), conv, ReLU(inplace=True))``; ``forward`` then did
``out = self.left(x); out += residual``. The maintainers' reply in the thread: an in-place addition after an
in-place ReLU is not allowed (the ReLU keeps its output to compute its gradient), and current PyTorch raises
the in-place error at backward. This script keeps that block (1-D convolutions over a bell's strike spectrum
instead of image patches) inside a small tuner that predicts how many cents each partial (hum, prime, tierce,
quint, nominal) is off the target temperament.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "bins": 64,
    "channels": 16,
    "partials": 5,
    "bells": 48,
    "batch_size": 12,
    "epochs": 3,
    "lr": 2e-3,
}


class ResidualBlock(nn.Module):
    def __init__(self, ch_in, ch_out, shortcut=None):
        super().__init__()
        self.left = nn.Sequential(
            nn.Conv1d(ch_in, 32, 3, 1, 1),
            nn.ReLU(inplace=True),
            nn.Conv1d(32, ch_out, 3, 1, 1),
            nn.ReLU(inplace=True),
        )
        self.right = shortcut

    def forward(self, x):
        out = self.left(x)
        residual = x if self.right is None else self.right(x)
        out += residual
        return F.relu(out, inplace=False)


class PartialTuner(nn.Module):
    def __init__(self, bins, channels, partials):
        super().__init__()
        self.stem = nn.Conv1d(1, channels, 5, 1, 2)
        self.blocks = nn.Sequential(ResidualBlock(channels, channels), ResidualBlock(channels, channels))
        self.pool = nn.AdaptiveAvgPool1d(8)
        self.head = nn.Linear(channels * 8, partials)

    def forward(self, spectrum):
        h = self.stem(spectrum.unsqueeze(1))
        h = self.blocks(h)
        return self.head(self.pool(h).flatten(1))


def synth_strike_spectra(n, bins, partials):
    """Log-magnitude spectra with five peaks whose shifts encode each partial's mistuning."""
    offsets = torch.randn(n, partials) * 20.0
    centres = torch.tensor([6.0, 12.0, 15.0, 18.0, 24.0]) * bins / 32
    grid = torch.arange(bins).float()
    spectra = torch.zeros(n, bins)
    for p in range(partials):
        peak = centres[p] + offsets[:, p:p + 1] / 25.0
        spectra += torch.exp(-0.5 * (grid - peak) ** 2)
    spectra += 0.05 * torch.randn(n, bins)
    return spectra, offsets / 20.0


def batches(spectra, offsets, size):
    for start in range(0, spectra.shape[0], size):
        yield spectra[start:start + size], offsets[start:start + size]


def tune_epoch(tuner, tuner_opt, spectra, offsets):
    total = 0.0
    for strike, target in batches(spectra, offsets, CONFIG["batch_size"]):
        tuner_opt.zero_grad()
        cents = tuner(strike)
        tuning_loss = F.smooth_l1_loss(cents, target)
        tuning_loss.backward()
        tuner_opt.step()
        total += tuning_loss.item()
    return total


def main():
    torch.manual_seed(1803)
    spectra, offsets = synth_strike_spectra(CONFIG["bells"], CONFIG["bins"], CONFIG["partials"])
    tuner = PartialTuner(CONFIG["bins"], CONFIG["channels"], CONFIG["partials"])
    tuner_opt = torch.optim.Adam(tuner.parameters(), lr=CONFIG["lr"])
    for epoch in range(CONFIG["epochs"]):
        total = tune_epoch(tuner, tuner_opt, spectra, offsets)
        print(f"epoch {epoch}: tuning loss {total:.4f}")


if __name__ == "__main__":
    main()
