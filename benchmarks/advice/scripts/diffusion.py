"""Diffusion: a DDPM-style noise-prediction network on 2-D data, with a cosine schedule and an EMA copy of the model."""

import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

T = 50


def cosine_schedule(steps, s=0.008):
    t = torch.linspace(0, steps, steps + 1)
    f = torch.cos((t / steps + s) / (1 + s) * math.pi / 2) ** 2
    alphas_bar = f / f[0]
    betas = 1 - alphas_bar[1:] / alphas_bar[:-1]
    return betas.clamp(max=0.999)


betas = cosine_schedule(T)
alphas = 1.0 - betas
alphas_bar = torch.cumprod(alphas, dim=0)
sqrt_ab = alphas_bar.sqrt()
sqrt_one_minus_ab = (1 - alphas_bar).sqrt()


def time_embedding(t, dim=16):
    freqs = torch.exp(-math.log(1000.0) * torch.arange(dim // 2) / (dim // 2))
    angles = t[:, None].float() * freqs[None]
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


class Denoiser(nn.Module):
    def __init__(self, d=2, hidden=64):
        super().__init__()
        self.inp = nn.Linear(d + 16, hidden)
        self.mid = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, d)

    def forward(self, x, t):
        h = torch.cat([x, time_embedding(t)], dim=1)
        h = F.silu(self.inp(h))
        h = h + F.silu(self.mid(h))
        return self.out(h)


def q_sample(x0, t, noise):
    return sqrt_ab[t, None] * x0 + sqrt_one_minus_ab[t, None] * noise


def make_data(n=256):
    centers = torch.tensor([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])
    return centers[torch.randint(0, 3, (n,))] + 0.1 * torch.randn(n, 2)


def update_ema(ema_model, model, decay=0.9):
    with torch.no_grad():
        for ema_p, p in zip(ema_model.parameters(), model.parameters()):
            ema_p.mul_(decay).add_(p, alpha=1 - decay)


def main():
    data = make_data()
    model = Denoiser()
    ema = copy.deepcopy(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(2):
        perm = torch.randperm(len(data))
        for i in range(0, len(data), 64):
            x0 = data[perm[i : i + 64]]
            t = torch.randint(0, T, (x0.shape[0],))
            noise = torch.randn_like(x0)
            x_t = q_sample(x0, t, noise)
            pred = model(x_t, t)
            loss = F.mse_loss(pred, noise)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            update_ema(ema, model)
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
