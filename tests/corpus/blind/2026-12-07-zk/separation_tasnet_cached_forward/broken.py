"""Two-speaker separation, Conv-TasNet style: learned encoder/decoder basis and a TCN masker, PIT SI-SNR.

Source: https://github.com/AlanDongMu/TimeGAN_PytorchRebuild/issues/2 ("RuntimeError: Trying to
backward through the graph a second time" in ``train_embedder`` during joint training). That
TimeGAN rebuild keeps one forward pass per batch on the model object (``gen_batch`` computed
``self.H``, ``self.X_tilde``, ``self.H_hat_supervise``, ...), and each network's update method
builds its loss from those attributes: in the joint phase ``train_generator`` backwards a loss
through the embedder's output and steps, then ``train_embedder(join_train=True)`` backwards the
embedder's loss through the same, already freed, forward. The repository's fix splits the forward
into ``batch_forward()`` and calls it again before ``train_embedder``. The training setting is the
writer's: a separation system object with an encoder/decoder pair pretrained as an autoencoder of
the mixture, a masker trained with the permutation-invariant SI-SNR loss, then joint training in
which the codec's loss adds the separation term, one optimizer per network.
"""
import math

import torch
import torch.nn as nn

torch.manual_seed(0)

N_SRC, L, N_BASIS, SIG_LEN = 2, 16, 32, 480


def si_snr(est, ref, eps=1e-8):
    est = est - est.mean(-1, keepdim=True)
    ref = ref - ref.mean(-1, keepdim=True)
    proj = (est * ref).sum(-1, keepdim=True) * ref / (ref.pow(2).sum(-1, keepdim=True) + eps)
    noise = est - proj
    return 10 * torch.log10(proj.pow(2).sum(-1) / (noise.pow(2).sum(-1) + eps) + eps)


def pit_si_snr_loss(est, ref):
    """Negative SI-SNR under the best of the two speaker orders, per utterance."""
    direct = si_snr(est, ref).mean(-1)
    swapped = si_snr(est.flip(1), ref).mean(-1)
    return -torch.maximum(direct, swapped).mean()


def synth_speech(batch):
    """Harmonic 'voices' with vibrato and syllable envelopes at 8 kHz."""
    t = torch.arange(SIG_LEN) / 8000.0
    f0 = 100 + 150 * torch.rand(batch, 1)
    vib = 1 + 0.02 * torch.sin(2 * math.pi * 5 * t)
    env = torch.sigmoid(8 * torch.sin(2 * math.pi * (2 + 3 * torch.rand(batch, 1)) * t))
    phase = 2 * math.pi * torch.cumsum(f0 * vib / 8000.0, dim=-1)
    voice = sum(torch.sin(k * phase) / k for k in range(1, 5))
    return env * voice


class TCNBlock(nn.Module):
    def __init__(self, ch, hidden, dilation):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(ch, hidden, 1), nn.PReLU(), nn.GroupNorm(1, hidden),
            nn.Conv1d(hidden, hidden, 3, padding=dilation, dilation=dilation, groups=hidden),
            nn.PReLU(), nn.GroupNorm(1, hidden), nn.Conv1d(hidden, ch, 1),
        )

    def forward(self, x):
        return x + self.net(x)


class Masker(nn.Module):
    def __init__(self, n_basis, bottleneck=24, hidden=48):
        super().__init__()
        self.inp = nn.Sequential(nn.GroupNorm(1, n_basis), nn.Conv1d(n_basis, bottleneck, 1))
        self.tcn = nn.Sequential(*[TCNBlock(bottleneck, hidden, 2 ** i) for i in range(4)])
        self.out = nn.Conv1d(bottleneck, N_SRC * n_basis, 1)

    def forward(self, w):
        m = self.out(self.tcn(self.inp(w)))
        return torch.sigmoid(m.view(w.shape[0], N_SRC, N_BASIS, -1))


class SeparationSystem:
    def __init__(self, batch_size=4, lr=1e-3):
        self.batch_size = batch_size
        self.encoder = nn.Sequential(nn.Conv1d(1, N_BASIS, L, stride=L // 2, bias=False), nn.ReLU())
        self.decoder = nn.ConvTranspose1d(N_BASIS, 1, L, stride=L // 2, bias=False)
        self.masker = Masker(N_BASIS)
        self.optim_encoder = torch.optim.Adam(self.encoder.parameters(), lr=lr)
        self.optim_decoder = torch.optim.Adam(self.decoder.parameters(), lr=lr)
        self.optim_masker = torch.optim.Adam(self.masker.parameters(), lr=lr)
        self.mse = nn.MSELoss()

    def gen_batch(self):
        self.S = torch.stack([synth_speech(self.batch_size), synth_speech(self.batch_size)], 1)
        gains = 0.5 + torch.rand(self.batch_size, N_SRC, 1)
        self.S = self.S * gains
        self.X = self.S.sum(1, keepdim=True)

    def batch_forward(self):
        self.W = self.encoder(self.X)
        self.X_tilde = self.decoder(self.W)[..., :SIG_LEN]
        self.M = self.masker(self.W)
        masked = (self.W.unsqueeze(1) * self.M).flatten(0, 1)
        self.S_hat = self.decoder(masked)[..., :SIG_LEN].view(self.batch_size, N_SRC, -1)

    def train_codec(self, join_train=False):
        self.optim_encoder.zero_grad()
        self.optim_decoder.zero_grad()
        self.recon_loss = self.mse(self.X_tilde, self.X)
        if not join_train:
            self.codec_loss = 10 * torch.sqrt(self.recon_loss)
        else:
            self.sep_loss = pit_si_snr_loss(self.S_hat, self.S)
            self.codec_loss = 10 * torch.sqrt(self.recon_loss) + 0.1 * self.sep_loss
        self.codec_loss.backward()
        self.optim_encoder.step()
        self.optim_decoder.step()

    def train_masker(self):
        self.optim_masker.zero_grad()
        self.sep_loss = pit_si_snr_loss(self.S_hat, self.S)
        self.sep_loss.backward()
        self.optim_masker.step()


system = SeparationSystem()

# 1. the encoder/decoder pair as an autoencoder of the mixture
for i in range(2):
    system.gen_batch()
    system.batch_forward()
    system.train_codec()

# 2. the masker alone
for i in range(2):
    system.gen_batch()
    system.batch_forward()
    system.train_masker()

# 3. joint training
for i in range(3):
    system.gen_batch()
    system.batch_forward()
    system.train_masker()
    system.train_codec(join_train=True)
    print(f"joint step {i}: SI-SNR {-system.sep_loss.item():.2f} dB, recon {system.recon_loss.item():.5f}")
