"""VQ-VAE with an EMA codebook: fine-tuning the encoder against a frozen codebook.

Report: https://github.com/lucidrains/vector-quantize-pytorch/issues/68
The author trained a network against a predetermined codebook that had to stay fixed. The quantizer
updates its codebook by exponential moving averages whenever it is in training mode, so the author
called ``vq.eval()`` to stop the updates; ``loss.backward()`` then failed with "element 0 of tensors
does not require grad and does not have a grad_fn". In eval mode the quantizer returns the codebook
vectors without the straight-through path (``z + (q - z).detach()`` is applied only in training) and
its commitment loss as a constant, so nothing the loss reads is attached to the encoder. The
maintainer's answer: keep the module in training mode and turn the EMA update off
(``ema_update = False``).

Here: an EMA VQ-VAE whose decoder and codebook come from a first stage (the codebook is warmed up by
EMA passes below); the second stage freezes both and fine-tunes the encoder on a shifted domain.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_CODES, CODE_DIM, TOKENS, IN_DIM = 16, 8, 4, 32


class VectorQuantizerEMA(nn.Module):
    def __init__(self, num_codes, dim, decay=0.9, eps=1e-5, commitment=0.25, ema_update=True):
        super().__init__()
        self.num_codes, self.decay, self.eps = num_codes, decay, eps
        self.commitment, self.ema_update = commitment, ema_update
        embed = torch.randn(num_codes, dim)
        self.register_buffer("embed", embed)
        self.register_buffer("cluster_size", torch.zeros(num_codes))
        self.register_buffer("embed_avg", embed.clone())

    @torch.no_grad()
    def _ema(self, flat, onehot):
        self.cluster_size.mul_(self.decay).add_(onehot.sum(0), alpha=1 - self.decay)
        self.embed_avg.mul_(self.decay).add_(onehot.t() @ flat, alpha=1 - self.decay)
        n = self.cluster_size.sum()
        size = (self.cluster_size + self.eps) / (n + self.num_codes * self.eps) * n
        self.embed.copy_(self.embed_avg / size.unsqueeze(1))

    def forward(self, z):
        flat = z.reshape(-1, z.shape[-1])
        dist = flat.pow(2).sum(1, keepdim=True) - 2 * flat @ self.embed.t() + self.embed.pow(2).sum(1)
        idx = dist.argmin(1)
        quantize = F.embedding(idx, self.embed).view_as(z)
        if self.training:
            if self.ema_update:
                self._ema(flat.detach(), F.one_hot(idx, self.num_codes).type(flat.dtype))
            commit = F.mse_loss(quantize.detach(), z)
            quantize = z + (quantize - z).detach()
        else:
            commit = torch.zeros(())
        return quantize, idx, commit * self.commitment


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(IN_DIM, 64), nn.ReLU(), nn.Linear(64, TOKENS * CODE_DIM))

    def forward(self, x):
        return self.net(x).view(x.shape[0], TOKENS, CODE_DIM)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(TOKENS * CODE_DIM, 64), nn.ReLU(), nn.Linear(64, IN_DIM))

    def forward(self, q):
        return self.net(q.flatten(1))


def make_batch(n, shift=0.0):
    basis = torch.linspace(0, 3.14, IN_DIM)
    phase = torch.rand(n, 1) * 3.14
    amp = 1.0 + 0.3 * torch.randn(n, 1)
    return amp * torch.sin(basis + phase) + shift + 0.05 * torch.randn(n, IN_DIM)


encoder, decoder = Encoder(), Decoder()
vq = VectorQuantizerEMA(NUM_CODES, CODE_DIM)

# stage 1 leftover: fit the codebook to the encoder's outputs by EMA passes
with torch.no_grad():
    for _ in range(5):
        vq(encoder(make_batch(64)))

# stage 2: codebook and decoder stay as they are, the encoder adapts to the shifted domain
vq.ema_update = False  # keep training mode (straight-through), stop the EMA updates
decoder.requires_grad_(False)
optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-3)

for step in range(20):
    x = make_batch(32, shift=0.5)
    z = encoder(x)
    q, codes, commit_loss = vq(z)
    recon = decoder(q)
    recon_loss = F.mse_loss(recon, x)
    loss = recon_loss + commit_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        used = codes.unique().numel()
        print(f"step {step} recon {recon_loss.item():.4f} commit {commit_loss.item():.4f} codes used {used}")
