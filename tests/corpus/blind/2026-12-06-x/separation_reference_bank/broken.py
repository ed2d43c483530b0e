"""Audio source separation: a mask U-Net on STFT magnitudes, conditioned on a reference clip through an attention bank.

Reduces https://github.com/MooreThreads/Moore-AnimateAnyone/issues/126. In Moore-AnimateAnyone's training a
reference UNet runs on the reference image; its self-attention blocks append their normalised hidden states
to a ``bank`` (ReferenceAttentionControl in "write" mode), ``reader.update(writer)`` copies the banks into
the denoising UNet's blocks, and those attend over their own tokens concatenated with every bank entry. The
banks are cleared only ``if accelerator.sync_gradients``, once per optimizer step. The author trained the
reference net too (``reference_unet.requires_grad_(True)``) and got "Trying to backward through the graph a
second time" with gradient checkpointing on; a commenter got it with gradient accumulation on, and both
found that it trains once the reference net is frozen. This case reproduces the accumulation path: the
second micro-batch reads the first micro-batch's bank entries, whose graph (into the trained reference
net) the first backward freed. The training setting is the writer's: target-source extraction, where a reference
encoder hears another clip of the wanted instrument and a U-Net predicts a mask on the mixture's magnitude,
with the loss on the waveform after the inverse STFT.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

SR, N_SAMPLES, N_FFT, HOP, ACCUM = 8000, 4096, 128, 64, 2
WINDOW = torch.hann_window(N_FFT)


def harmonic_tone(profile, n_notes=3):
    """Notes of a harmonic instrument whose timbre is the amplitude profile of its partials."""
    t = torch.arange(N_SAMPLES) / SR
    out = torch.zeros(N_SAMPLES)
    for _ in range(n_notes):
        f0 = 150 + 350 * torch.rand(())
        start = int(torch.randint(0, N_SAMPLES // 2, ()))
        env = torch.zeros(N_SAMPLES)
        env[start:] = torch.exp(-6.0 * t[: N_SAMPLES - start])
        for k, a in enumerate(profile, start=1):
            out += a * env * torch.sin(2 * math.pi * k * f0 * t)
    return out / (out.abs().max() + 1e-6)


def example():
    profile = torch.rand(6) * torch.tensor([1.0, 0.8, 0.6, 0.4, 0.3, 0.2])
    target, reference = harmonic_tone(profile), harmonic_tone(profile)
    noise = F.avg_pool1d(torch.randn(1, 1, N_SAMPLES + 7), 8, stride=1)[0, 0]
    interferer = 0.5 * harmonic_tone(torch.rand(6)) + 0.8 * noise
    return target + interferer, target, reference


def stft(x):
    return torch.stft(x, N_FFT, HOP, window=WINDOW, return_complex=True)


class BankedSelfAttention(nn.Module):
    """Self-attention whose keys may include features written by another network into its bank."""

    def __init__(self, dim, heads=2):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mode, self.bank = "none", []

    def forward(self, h):
        b, c, f, t = h.shape
        tokens = h.flatten(2).transpose(1, 2)
        x = self.norm(tokens)
        if self.mode == "write":
            self.bank.append(x.clone())
        context = torch.cat([x] + self.bank, dim=1) if self.mode == "read" else x
        tokens = tokens + self.attn(x, context, context, need_weights=False)[0]
        return tokens.transpose(1, 2).reshape(b, c, f, t)


class ReferenceAttentionControl:
    def __init__(self, net, mode):
        self.blocks = [m for m in net.modules() if isinstance(m, BankedSelfAttention)]
        for block in self.blocks:
            block.mode = mode

    def update(self, writer):
        for reader_block, writer_block in zip(self.blocks, writer.blocks):
            reader_block.bank = [v.clone() for v in writer_block.bank]

    def clear(self):
        for block in self.blocks:
            block.bank.clear()


class ReferenceEncoder(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(1, 8, 3, 2, 1), nn.GELU(), nn.Conv2d(8, ch, 3, 2, 1), nn.GELU())
        self.block = BankedSelfAttention(ch)

    def forward(self, logmag):
        return self.block(self.down(logmag))


class MaskUNet(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(1, 8, 3, 2, 1), nn.GELU())
        self.enc2 = nn.Sequential(nn.Conv2d(8, ch, 3, 2, 1), nn.GELU())
        self.block = BankedSelfAttention(ch)
        self.dec2 = nn.Sequential(nn.ConvTranspose2d(ch, 8, 4, 2, 1), nn.GELU())
        self.dec1 = nn.Sequential(nn.ConvTranspose2d(16, 8, 4, 2, 1), nn.GELU(), nn.Conv2d(8, 1, 1))

    def forward(self, logmag):
        e1 = self.enc1(logmag)
        d2 = self.dec2(self.block(self.enc2(e1)))[..., : e1.shape[-2], : e1.shape[-1]]
        d1 = self.dec1(torch.cat([d2, e1], dim=1))[..., : logmag.shape[-2], : logmag.shape[-1]]
        return torch.sigmoid(d1)


data = [example() for _ in range(24)]
mixtures, targets, references = (torch.stack(t) for t in zip(*data))

separator, reference_net = MaskUNet(), ReferenceEncoder()
writer = ReferenceAttentionControl(reference_net, "write")
reader = ReferenceAttentionControl(separator, "read")
optimizer = torch.optim.Adam(list(separator.parameters()) + list(reference_net.parameters()), lr=2e-3)

for epoch in range(2):
    perm = torch.randperm(24)
    for micro_step, start in enumerate(range(0, 24, 4)):
        idx = perm[start:start + 4]
        mix_spec, tgt_spec = stft(mixtures[idx]), stft(targets[idx])
        reference_net(torch.log1p(stft(references[idx]).abs()).unsqueeze(1))
        reader.update(writer)
        mask = separator(torch.log1p(mix_spec.abs()).unsqueeze(1)).squeeze(1)
        est_spec = mask * mix_spec.abs() * torch.exp(1j * mix_spec.angle())
        estimate = torch.istft(est_spec, N_FFT, HOP, window=WINDOW, length=N_SAMPLES)
        loss = (estimate - targets[idx]).abs().mean() + (est_spec.abs() - tgt_spec.abs()).abs().mean()
        (loss / ACCUM).backward()
        if (micro_step + 1) % ACCUM == 0:
            optimizer.step()
            optimizer.zero_grad()
            reader.clear()
            writer.clear()
    with torch.no_grad():
        sdr = 10 * torch.log10(targets[idx].pow(2).sum(-1) / (targets[idx] - estimate).pow(2).sum(-1))
    print(f"epoch {epoch}: loss {loss.item():.4f} SDR {sdr.mean().item():.2f} dB")
