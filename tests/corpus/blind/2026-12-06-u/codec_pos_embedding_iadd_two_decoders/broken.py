"""Neural audio codec (EnCodec-style): residual-VQ latent read by two decoders, multi-scale discriminators.

Report: https://github.com/thuanz123/enhancing-transformers/issues/11
The author of the report found that the ViT-VQGAN decoder adds its positional embedding to the
quantised latent in place (``token += self.de_pos_embedding``). With one decoder this goes unnoticed;
with two decoders reading the same ``quant`` (``rec_a = decoder_a(quant); rec_b = decoder_b(quant)``)
the second decoder's in-place add changes the tensor the first decoder saved, and backward fails with
"one of the variables needed for gradient computation has been modified by an inplace operation".
The suggested fix, accepted by the maintainer: ``token = token + self.de_pos_embedding``.

The report is an image VQ model; the training setting is the writer's: a small waveform codec whose
quantised frames feed a waveform decoder and an auxiliary mel decoder (both transformer decoders with
learned positions), trained against two waveform discriminators at different scales.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

B, T, HOP, D, K, NQ = 4, 512, 8, 32, 64, 2
FRAMES = T // HOP
N_MEL = 16


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, 16, 7, padding=3),
            nn.ELU(),
            nn.Conv1d(16, D, 2 * HOP, stride=HOP, padding=HOP // 2),
        )

    def forward(self, wav):  # (B, 1, T) -> (B, D, FRAMES)
        return self.net(wav)


class ResidualVQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.codebooks = nn.ParameterList([nn.Parameter(torch.randn(K, D)) for _ in range(NQ)])

    def forward(self, z):
        x = z.transpose(1, 2).reshape(-1, D)
        residual = x
        quantized = torch.zeros_like(x)
        codebook_loss, commit_loss = 0.0, 0.0
        for cb in self.codebooks:
            dist = residual.detach().pow(2).sum(1, keepdim=True) - 2 * residual.detach() @ cb.t() + cb.pow(2).sum(1)
            q = cb[dist.argmin(1)]
            codebook_loss = codebook_loss + F.mse_loss(q, residual.detach())
            commit_loss = commit_loss + F.mse_loss(residual, q.detach())
            quantized = quantized + q
            residual = residual - q.detach()
        quant = x + (quantized - x).detach()  # straight-through
        return quant.reshape(z.shape[0], FRAMES, D).transpose(1, 2), codebook_loss, commit_loss


class FrameDecoder(nn.Module):
    """One transformer block over the quantised frames, then a per-frame projection."""

    def __init__(self, out_dim):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, FRAMES, D) * 0.02)
        self.norm1 = nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, 4, batch_first=True)
        self.norm2 = nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 64), nn.GELU(), nn.Linear(64, D))
        self.proj = nn.Linear(D, out_dim)

    def forward(self, quant):  # (B, D, FRAMES)
        tokens = quant.transpose(1, 2)
        tokens += self.pos
        h = self.norm1(tokens)
        h = tokens + self.attn(h, h, h, need_weights=False)[0]
        h = h + self.ff(self.norm2(h))
        return self.proj(h)  # (B, FRAMES, out_dim)


class ScaleDiscriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, 8, 15, padding=7),
            nn.LeakyReLU(0.2),
            nn.Conv1d(8, 16, 41, stride=4, padding=20, groups=4),
            nn.LeakyReLU(0.2),
            nn.Conv1d(16, 1, 3, padding=1),
        )

    def forward(self, wav):
        return self.net(wav)


def run_discriminators(discs, wav):
    outs, x = [], wav
    for i, d in enumerate(discs):
        if i > 0:
            x = F.avg_pool1d(x, 4, 2, padding=1)
        outs.append(d(x))
    return outs


def mel_target(wav):
    spec = torch.stft(wav.squeeze(1), n_fft=32, hop_length=HOP, window=torch.hann_window(32), return_complex=True)
    return torch.log1p(spec.abs()[:, :N_MEL, :FRAMES]).transpose(1, 2)


encoder = Encoder()
rvq = ResidualVQ()
wave_decoder = FrameDecoder(HOP)
mel_decoder = FrameDecoder(N_MEL)
discs = nn.ModuleList([ScaleDiscriminator(), ScaleDiscriminator()])

opt_g = torch.optim.Adam(
    list(encoder.parameters()) + list(rvq.parameters()) + list(wave_decoder.parameters()) + list(mel_decoder.parameters()),
    lr=3e-4,
    betas=(0.5, 0.9),
)
opt_d = torch.optim.Adam(discs.parameters(), lr=3e-4, betas=(0.5, 0.9))

t = torch.linspace(0, 1, T)
freqs = torch.rand(16, 1) * 40 + 5
dataset = (torch.sin(2 * torch.pi * freqs * t) + 0.1 * torch.randn(16, T)).unsqueeze(1)

for step in range(6):
    wav = dataset[(step * B) % 16 : (step * B) % 16 + B]
    z = encoder(wav)
    quant, codebook_loss, commit_loss = rvq(z)
    rec = wave_decoder(quant).reshape(B, 1, T)
    mel_pred = mel_decoder(quant)

    opt_d.zero_grad()
    d_loss = 0.0
    for real, fake in zip(run_discriminators(discs, wav), run_discriminators(discs, rec.detach())):
        d_loss = d_loss + F.relu(1 - real).mean() + F.relu(1 + fake).mean()
    d_loss.backward()
    opt_d.step()

    opt_g.zero_grad()
    adv = sum(F.relu(1 - fake).mean() for fake in run_discriminators(discs, rec))
    recon = F.l1_loss(rec, wav) + F.mse_loss(mel_pred, mel_target(wav))
    g_loss = recon + 0.1 * adv + codebook_loss + 0.25 * commit_loss
    g_loss.backward()
    opt_g.step()
    print(f"step {step}: d {d_loss.item():.3f} g {g_loss.item():.3f}")
