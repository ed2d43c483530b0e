"""Training a spectrogram model through Griffin-Lim resynthesis, with a loss on the waveform.

Reduced from https://github.com/pytorch/audio/issues/729: the author predicts a magnitude
spectrogram with a model, resynthesises the waveform with Griffin-Lim (torchaudio's
``transforms.GriffinLim``; its functional body is inlined here, real/imag pairs in a last
dimension of size 2 as torchaudio had it then) and trains on the MSE to the clean waveform.
Synthetic noisy tones, Adam, CPU.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

N_FFT, HOP, WIN = 256, 64, 128


def _stft(waveform, window):
    spec = torch.stft(waveform, N_FFT, HOP, WIN, window, center=True, pad_mode="reflect", return_complex=True)
    return torch.view_as_real(spec)


def _istft(spec, window, length):
    return torch.istft(torch.view_as_complex(spec.contiguous()), N_FFT, HOP, WIN, window, length=length)


def complex_norm(complex_tensor, power=1.0):
    return complex_tensor.pow(2.0).sum(-1).pow(0.5 * power)


def griffinlim(specgram, window, power, n_iter, momentum, length, rand_init=True):
    assert 0 <= momentum < 1
    specgram = specgram.pow(1 / power)
    batch, freq, frames = specgram.size()
    angles = 2 * math.pi * torch.rand(batch, freq, frames) if rand_init else torch.zeros(batch, freq, frames)
    angles = torch.stack([angles.cos(), angles.sin()], dim=-1)
    specgram = specgram.unsqueeze(-1).expand_as(angles)

    rebuilt = torch.tensor(0.0)
    for _ in range(n_iter):
        tprev = rebuilt
        inverse = _istft(specgram * angles, window, length)
        rebuilt = _stft(inverse, window)
        angles = rebuilt.sub(tprev, alpha=momentum / (1 + momentum))
        angles = angles.div(complex_norm(angles).add(1e-16).unsqueeze(-1).expand_as(angles))

    return _istft(specgram * angles, window, length)


class GriffinLim(nn.Module):
    def __init__(self, n_iter=8, power=2.0, momentum=0.99, length=None):
        super().__init__()
        self.register_buffer("window", torch.hann_window(WIN))
        self.n_iter, self.power, self.momentum, self.length = n_iter, power, momentum, length

    def forward(self, specgram):
        return griffinlim(specgram, self.window, self.power, self.n_iter, self.momentum, self.length)


class SpectralEnhancer(nn.Module):
    def __init__(self, n_freq=N_FFT // 2 + 1):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_freq, n_freq), nn.ReLU(), nn.Linear(n_freq, n_freq), nn.Softplus())

    def forward(self, power_spec):
        return self.net(power_spec.transpose(1, -1)).transpose(1, -1)


def make_batch(n, length):
    t = torch.arange(length) / 8000.0
    freqs = 200 + 600 * torch.rand(n, 1)
    clean = 0.5 * torch.sin(2 * math.pi * freqs * t)
    noisy = clean + 0.1 * torch.randn(n, length)
    return noisy, clean


def main():
    torch.manual_seed(0)
    length = 2048
    window = torch.hann_window(WIN)
    model = SpectralEnhancer()
    resyn = GriffinLim(n_iter=8, length=length)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)

    for step in range(5):
        noisy, clean = make_batch(4, length)
        power_spec = _stft(noisy, window).pow(2).sum(-1)
        out = model(power_spec)
        wav = resyn(out)
        loss = F.mse_loss(wav, clean)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.5f}")


if __name__ == "__main__":
    main()
