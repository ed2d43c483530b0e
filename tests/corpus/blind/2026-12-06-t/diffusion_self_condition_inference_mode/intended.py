"""DDPM on 2-D point clouds with self-conditioning and an EMA copy of the denoiser.

Source: https://github.com/lucidrains/denoising-diffusion-pytorch/issues/286
The author enabled self-conditioning in a DDPM trainer: half of the time the
denoiser first predicts x_0 with the self-conditioning input left empty, and that
estimate is fed back as an extra input for the prediction the loss is taken on.
The first prediction was computed under ``torch.inference_mode()`` (it should
carry no gradient), and training stopped with "Inference tensors cannot be saved
for backward". The author's fix was ``torch.no_grad()`` in place of
``torch.inference_mode()``. The report's denoiser is an image U-Net; here the
denoiser is an MLP on 2-D points, whose self-conditioning input has a projection
of its own.
"""

import copy
import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)

T = 100
DIM = 2
HIDDEN = 64


def cosine_schedule(steps, s=0.008):
    t = torch.linspace(0, steps, steps + 1) / steps
    f = torch.cos((t + s) / (1 + s) * math.pi / 2) ** 2
    alphas_cumprod = f / f[0]
    betas = 1 - alphas_cumprod[1:] / alphas_cumprod[:-1]
    return betas.clamp(1e-5, 0.999)


class TimeEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t):
        half = self.dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half) / half)
        args = t.float()[:, None] * freqs[None]
        return self.mlp(torch.cat([args.sin(), args.cos()], dim=-1))


class Denoiser(nn.Module):
    """Predicts x_0 from x_t, t and (optionally) an earlier estimate of x_0."""

    def __init__(self):
        super().__init__()
        self.in_proj = nn.Linear(DIM, HIDDEN)
        self.self_cond_proj = nn.Linear(DIM, HIDDEN)
        self.time = TimeEmbedding(HIDDEN)
        self.body = nn.Sequential(nn.SiLU(), nn.Linear(HIDDEN, HIDDEN), nn.SiLU(), nn.Linear(HIDDEN, DIM))

    def forward(self, x, t, x_self_cond=None):
        if x_self_cond is None:
            x_self_cond = torch.zeros_like(x)
        h = self.in_proj(x) + self.self_cond_proj(x_self_cond) + self.time(t)
        return self.body(h)


class GaussianDiffusion(nn.Module):
    def __init__(self, model, timesteps=T):
        super().__init__()
        self.model = model
        betas = cosine_schedule(timesteps)
        alphas_cumprod = torch.cumprod(1 - betas, dim=0)
        self.register_buffer("sqrt_ac", alphas_cumprod.sqrt())
        self.register_buffer("sqrt_1m_ac", (1 - alphas_cumprod).sqrt())
        self.timesteps = timesteps

    def q_sample(self, x0, t, noise):
        return self.sqrt_ac[t][:, None] * x0 + self.sqrt_1m_ac[t][:, None] * noise

    def p_losses(self, x0):
        b = x0.shape[0]
        t = torch.randint(0, self.timesteps, (b,))
        noise = torch.randn_like(x0)
        x = self.q_sample(x0, t, noise)
        x_self_cond = None
        if random.random() < 0.5:
            with torch.no_grad():
                x_self_cond = self.model(x, t).detach()
        pred_x0 = self.model(x, t, x_self_cond)
        return F.mse_loss(pred_x0, x0)


def make_moons(n):
    theta = torch.rand(n) * math.pi
    upper = torch.rand(n) < 0.5
    x = torch.where(upper, theta.cos(), 1 - theta.cos())
    y = torch.where(upper, theta.sin(), 0.5 - theta.sin())
    return torch.stack([x, y], dim=1) + 0.05 * torch.randn(n, 2)


@torch.no_grad()
def ema_update(ema_model, model, decay=0.995):
    for p_ema, p in zip(ema_model.parameters(), model.parameters()):
        p_ema.mul_(decay).add_(p, alpha=1 - decay)


denoiser = Denoiser()
diffusion = GaussianDiffusion(denoiser)
ema_denoiser = copy.deepcopy(denoiser).requires_grad_(False)
optimizer = torch.optim.Adam(denoiser.parameters(), lr=2e-3)
data = make_moons(512)

for step in range(12):
    batch = data[torch.randint(0, data.shape[0], (64,))]
    loss = diffusion.p_losses(batch)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    ema_update(ema_denoiser, denoiser)
    if step % 4 == 0:
        print(f"step {step} loss {loss.item():.4f}")
