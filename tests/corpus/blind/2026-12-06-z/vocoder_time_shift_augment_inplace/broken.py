"""GAN vocoder (HiFi-GAN layout: transposed-conv generator with residual blocks, multi-scale
discriminator, least-squares adversarial loss, feature matching and a mel loss), trained with a
differentiable augmentation in the style of DiffAugment: both real and generated waveforms get a
random circular time shift before they reach the discriminators.

Report: https://github.com/lucidrains/lightweight-gan/pull/33 ("fix inplace operation being used in
rand offset"). lightweight-gan's DiffAugment ``rand_offset`` rolled each image of the batch and wrote
the result back into the batch (``x[i] = torch.roll(x[i], ...)``), an in-place write into the
generator's output that autograd rejects at backward ("modified by an inplace operation"). The fix
rolls each sample out of place and stacks them.

The training setting is the writer's: the same helper, applied to waveforms. The generated batch is
written in place twice: through ``fake.detach()`` in the discriminator step (the detached tensor
shares its storage and version counter with ``fake``) and directly in the generator step, while
``tanh`` and the mel loss's STFT saved ``fake`` for their backward.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

SEG = 256
N_FFT, HOP, N_MELS = 64, 16, 16
BATCH = 4
STEPS = 6

WINDOW = torch.hann_window(N_FFT)
MEL_FB = torch.rand(N_MELS, N_FFT // 2 + 1).softmax(dim=1)  # fixed stand-in for a mel filterbank


def log_mel(wave):
    spec = torch.stft(wave, N_FFT, HOP, window=WINDOW, return_complex=True).abs()
    return torch.log(torch.clamp(MEL_FB @ spec, min=1e-5))


def synth_batch(batch):
    """Sums of three sinusoids with random pitch, amplitude and phase."""
    t = torch.arange(SEG) / 4000.0
    freqs = 100 + 900 * torch.rand(batch, 3, 1)
    amps = 0.2 * torch.rand(batch, 3, 1)
    phase = 6.28 * torch.rand(batch, 3, 1)
    return (amps * torch.sin(6.28 * freqs * t + phase)).sum(dim=1)


def rand_time_shift(wave, max_shift=24):
    """DiffAugment-style offset: roll each waveform by its own random amount."""
    for i in range(wave.size(0)):
        shift = int(torch.randint(-max_shift, max_shift + 1, (1,)))
        if shift != 0:
            wave[i] = torch.roll(wave[i], shift, dims=-1)
    return wave


class ResBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.c1 = nn.Conv1d(ch, ch, 3, padding=1, dilation=1)
        self.c2 = nn.Conv1d(ch, ch, 3, padding=3, dilation=3)

    def forward(self, x):
        x = x + self.c1(F.leaky_relu(x, 0.1))
        return x + self.c2(F.leaky_relu(x, 0.1))


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = nn.Conv1d(N_MELS, 32, 7, padding=3)
        self.up1 = nn.ConvTranspose1d(32, 16, 8, stride=4, padding=2)
        self.res1 = ResBlock(16)
        self.up2 = nn.ConvTranspose1d(16, 8, 8, stride=4, padding=2)
        self.res2 = ResBlock(8)
        self.post = nn.Conv1d(8, 1, 7, padding=3)

    def forward(self, mel):
        x = self.pre(mel)
        x = self.res1(self.up1(F.leaky_relu(x, 0.1)))
        x = self.res2(self.up2(F.leaky_relu(x, 0.1)))
        return torch.tanh(self.post(F.leaky_relu(x, 0.1))).squeeze(1)[:, :SEG]


class ScaleDiscriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([
            nn.Conv1d(1, 8, 15, padding=7),
            nn.Conv1d(8, 16, 41, stride=4, groups=4, padding=20),
            nn.Conv1d(16, 16, 5, padding=2),
        ])
        self.out = nn.Conv1d(16, 1, 3, padding=1)

    def forward(self, wave):
        x, fmaps = wave.unsqueeze(1), []
        for conv in self.convs:
            x = F.leaky_relu(conv(x), 0.1)
            fmaps.append(x)
        return self.out(x), fmaps


class MultiScaleDiscriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.discs = nn.ModuleList([ScaleDiscriminator(), ScaleDiscriminator()])
        self.pool = nn.AvgPool1d(4, 2, padding=2)

    def forward(self, wave):
        outs = []
        for i, d in enumerate(self.discs):
            outs.append(d(wave))
            if i == 0:
                wave = self.pool(wave.unsqueeze(1)).squeeze(1)
        return outs


def feature_matching(fm_real, fm_fake):
    return sum(F.l1_loss(f, r.detach()) for r, f in zip(fm_real, fm_fake))


generator = Generator()
msd = MultiScaleDiscriminator()
opt_g = torch.optim.AdamW(generator.parameters(), lr=2e-4, betas=(0.8, 0.99))
opt_d = torch.optim.AdamW(msd.parameters(), lr=2e-4, betas=(0.8, 0.99))

for step in range(STEPS):
    real = synth_batch(BATCH)
    mel = log_mel(real)
    fake = generator(mel)

    # discriminator step
    d_real = msd(rand_time_shift(real.clone()))
    d_fake = msd(rand_time_shift(fake.detach()))
    loss_d = sum(((1 - r) ** 2).mean() + (f**2).mean() for (r, _), (f, _) in zip(d_real, d_fake))
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()

    # generator step
    loss_mel = F.l1_loss(log_mel(fake), mel)
    d_real = msd(rand_time_shift(real.clone()))
    d_fake = msd(rand_time_shift(fake))
    loss_adv = sum(((1 - f) ** 2).mean() for f, _ in d_fake)
    loss_fm = sum(feature_matching(rf, ff) for (_, rf), (_, ff) in zip(d_real, d_fake))
    opt_g.zero_grad()
    (loss_adv + 2.0 * loss_fm + 45.0 * loss_mel).backward()
    opt_g.step()
    print(f"step {step}: D {loss_d.item():.3f}  adv {loss_adv.item():.3f}  fm {loss_fm.item():.3f}  mel {loss_mel.item():.3f}")
