"""DDSP-style harmonic-plus-noise singing synthesiser (intended: the wrapper reads the filters as a property).

Source: https://github.com/asteroid-team/asteroid/issues/18. asteroid's ``AnalyticFreeFB`` learns
half of its filters and derives the other half as their Hilbert transforms in a ``filters``
property (FFT, swap real and imaginary parts, inverse FFT, concatenate), so the filters are
recomputed from the parameters on every access. But the ``Encoder``/``Decoder`` wrapper read the
property once in its constructor (``self.filters = self.filterbank.filters``) and convolved with
that stored tensor in every forward; training then failed at the second ``loss.backward()``
("Trying to backward through the graph a second time"). The maintainer's fix (commit "Filters as a
property and not an attribute, solves #18") made the wrapper's ``filters`` a property too.
The training setting is the writer's: a DDSP synthesiser for a sung note (f0 and loudness in, a
harmonic oscillator bank plus filtered noise out) whose noise is shaped by a learned analytic
filterbank wrapped the same way, trained with a multi-resolution STFT loss.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

SR, HOP, FRAMES, N_HARM, N_FILT, K = 8000, 64, 32, 16, 8, 31
N = HOP * FRAMES


class AnalyticFreeFB(nn.Module):
    """Learned filters plus their Hilbert transforms (analytic pairs)."""

    def __init__(self, n_filters, kernel_size):
        super().__init__()
        self.kernel_size = kernel_size
        self._filters = nn.Parameter(torch.empty(n_filters // 2, 1, kernel_size))
        nn.init.xavier_normal_(self._filters, gain=1.0 / math.sqrt(2.0))

    @property
    def filters(self):
        ft = torch.fft.rfft(self._filters, dim=-1, norm="ortho")
        hilbert = torch.fft.irfft(torch.complex(ft.imag, -ft.real), n=self.kernel_size, dim=-1, norm="ortho")
        return torch.cat([self._filters, hilbert], dim=0)


class Encoder(nn.Module):
    """Convolves a waveform with a filterbank's filters (one output channel per filter)."""

    def __init__(self, filterbank):
        super().__init__()
        self.filterbank = filterbank

    @property
    def filters(self):
        return self.filterbank.filters

    def forward(self, waveform):
        return F.conv1d(waveform, self.filters, padding=self.filterbank.kernel_size // 2)


class Controls(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(2, 32, batch_first=True)
        self.head = nn.Linear(32, 1 + N_HARM + N_FILT)

    def forward(self, f0, loudness):
        h, _ = self.gru(torch.stack([f0 / 500.0, loudness], dim=-1))
        out = self.head(h)
        amp = F.softplus(out[..., :1])
        harm = torch.softmax(out[..., 1 : 1 + N_HARM], dim=-1)
        band_gains = torch.sigmoid(out[..., 1 + N_HARM :])
        return amp, harm, band_gains


def upsample(x):
    return F.interpolate(x.transpose(1, 2), size=N, mode="linear", align_corners=False).transpose(1, 2)


class DDSPSynth(nn.Module):
    def __init__(self):
        super().__init__()
        self.controls = Controls()
        self.noise_bank = Encoder(AnalyticFreeFB(N_FILT, K))

    def forward(self, f0, loudness, noise):
        amp, harm, band_gains = self.controls(f0, loudness)
        k = torch.arange(1, N_HARM + 1)
        harm = harm * (f0[..., None] * k < SR / 2).float()
        phase = 2 * math.pi * torch.cumsum(upsample(f0[..., None]) / SR, dim=1)
        harmonic = (upsample(amp * harm) * torch.sin(phase * k)).sum(-1)
        bands = self.noise_bank(noise.unsqueeze(1))
        noisy = (bands * upsample(band_gains).transpose(1, 2)).sum(1)
        return harmonic + 0.1 * noisy


def multi_resolution_stft_loss(pred, target, ffts=(64, 128, 256)):
    total = 0.0
    for n_fft in ffts:
        win = torch.hann_window(n_fft)
        p = torch.stft(pred, n_fft, n_fft // 4, window=win, return_complex=True).abs()
        t = torch.stft(target, n_fft, n_fft // 4, window=win, return_complex=True).abs()
        total = total + (p - t).abs().mean() + (torch.log(p + 1e-5) - torch.log(t + 1e-5)).abs().mean()
    return total


def sung_note_batch(b):
    f0 = 200 + 200 * torch.rand(b, 1) + 5 * torch.sin(torch.linspace(0, 6, FRAMES))[None]
    loudness = torch.rand(b, 1) * torch.hann_window(FRAMES, periodic=False)[None]
    f0_s = upsample(f0[..., None]).squeeze(-1)
    phase = 2 * math.pi * torch.cumsum(f0_s / SR, dim=1)
    target = sum(torch.sin(h * phase) / h for h in range(1, 5)) * upsample(loudness[..., None]).squeeze(-1)
    return f0, loudness, target + 0.01 * torch.randn(b, N)


model = DDSPSynth()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(20):
    f0, loudness, target = sung_note_batch(4)
    audio = model(f0, loudness, torch.rand(4, N) * 2 - 1)
    loss = multi_resolution_stft_loss(audio, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step} mrstft {loss.item():.4f}")
