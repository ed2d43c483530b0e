"""Music source separation: a small Demucs-style waveform U-Net trained with a multi-resolution STFT loss.

Source: https://github.com/source-separation/tutorial/issues/28 (the source-separation tutorial's
"Signs of healthy training" section keeps each step's loss tensor in a list and later calls
``np.log10(losses[j])`` on it: "Can't call numpy() on Tensor that requires grad").

The author trains a separator and, as the tutorial recommends, watches the loss history and the
gradient norm for signs of healthy training. Here the check runs at the end of every epoch: the
epoch's losses are turned into log10 values with numpy. The history holds the loss tensors
themselves, each still attached to its step's graph, so numpy refuses them.

Corrected: the history keeps `loss.item()`, a detached Python float, as the issue asks.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

SR = 2048
SEG = 512
N_SOURCES = 2
STFT_RES = [(32, 8), (64, 16), (128, 32)]


def make_batch(batch_size):
    t = torch.arange(SEG) / SR
    f_bass = 40 + 40 * torch.rand(batch_size, 1)
    f_lead = 300 + 300 * torch.rand(batch_size, 1)
    bass = 0.6 * torch.sin(2 * torch.pi * f_bass * t)
    lead = 0.3 * torch.sign(torch.sin(2 * torch.pi * f_lead * t))
    sources = torch.stack([bass, lead], dim=1)  # (B, S, T)
    mix = sources.sum(1, keepdim=True)
    return mix, sources


class EncoderBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, 8, stride=4, padding=2)
        self.rewrite = nn.Conv1d(cout, 2 * cout, 1)

    def forward(self, x):
        return F.glu(self.rewrite(F.relu(self.conv(x))), dim=1)


class DecoderBlock(nn.Module):
    def __init__(self, cin, cout, last=False):
        super().__init__()
        self.rewrite = nn.Conv1d(cin, 2 * cin, 3, padding=1)
        self.conv_tr = nn.ConvTranspose1d(cin, cout, 8, stride=4, padding=2)
        self.last = last

    def forward(self, x, skip):
        x = F.glu(self.rewrite(x + skip), dim=1)
        x = self.conv_tr(x)
        return x if self.last else F.relu(x)


class WaveUNet(nn.Module):
    def __init__(self, channels=16):
        super().__init__()
        self.enc1 = EncoderBlock(1, channels)
        self.enc2 = EncoderBlock(channels, 2 * channels)
        self.rnn = nn.GRU(2 * channels, channels, bidirectional=True, batch_first=True)
        self.dec2 = DecoderBlock(2 * channels, channels)
        self.dec1 = DecoderBlock(channels, N_SOURCES, last=True)

    def forward(self, mix):
        mean, std = mix.mean(-1, keepdim=True), mix.std(-1, keepdim=True) + 1e-5
        x = (mix - mean) / std
        e1 = self.enc1(x)
        e2 = self.enc2(e1)
        z, _ = self.rnn(e2.transpose(1, 2))
        z = z.transpose(1, 2)
        d2 = self.dec2(z, e2)
        out = self.dec1(d2, e1)
        return out * std + mean


def multires_stft_loss(est, ref):
    est, ref = est.reshape(-1, est.shape[-1]), ref.reshape(-1, ref.shape[-1])
    total = 0.0
    for n_fft, hop in STFT_RES:
        window = torch.hann_window(n_fft)
        e = torch.stft(est, n_fft, hop, window=window, return_complex=True).abs().clamp_min(1e-7)
        r = torch.stft(ref, n_fft, hop, window=window, return_complex=True).abs().clamp_min(1e-7)
        sc = torch.linalg.norm(r - e) / torch.linalg.norm(r)
        mag = F.l1_loss(torch.log(e), torch.log(r))
        total = total + sc + mag
    return total / len(STFT_RES)


model = WaveUNet()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
train_set = [make_batch(4) for _ in range(3)]

losses, grad_norms = [], []
for epoch in range(2):
    for mix, sources in train_set[:2] if epoch == 0 else train_set:
        estimate = model(mix)
        loss = multires_stft_loss(estimate, sources) + F.l1_loss(estimate, sources)
        optimizer.zero_grad()
        loss.backward()
        grad_norms.append(float(nn.utils.clip_grad_norm_(model.parameters(), 5.0)))
        optimizer.step()
        losses.append(loss.item())
    n = 2 if epoch == 0 else len(train_set)
    log_loss = np.log10(losses[-n:])
    print(f"epoch {epoch}: log10 loss {log_loss.mean():.3f}, grad norm {np.mean(grad_norms[-n:]):.3f}")
