"""Reduced from https://github.com/lucidrains/denoising-diffusion-pytorch/issues/286

The author trained a denoising diffusion model (GaussianDiffusion around a U-Net, the repository's
Trainer) with self-conditioning enabled, and every run failed with "RuntimeError: Inference tensors
cannot be saved for backward". In p_losses, half of the time the model first predicts x_start
without gradient, and that prediction is fed back to the model as an extra input. The prediction was
made under `torch.inference_mode()`, so it is an inference tensor, and `.detach_()` or `.clone()`
did not help; the author's fix, which the issue reports works, is `torch.no_grad()` instead.

Here the same training in miniature. In this reduction the self-conditioning estimate enters the
U-Net through its own input convolution (added to the embedding of the noisy image), which saves it
for the backward: that is where the inference tensor meets autograd.
"""
import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)


def extract(a, t, x_shape):
    out = a.gather(-1, t)
    return out.reshape(t.shape[0], *((1,) * (len(x_shape) - 1)))


def cosine_beta_schedule(timesteps, s=0.008):
    steps = timesteps + 1
    x = torch.linspace(0, timesteps, steps)
    alphas_cumprod = torch.cos(((x / timesteps) + s) / (1 + s) * math.pi * 0.5) ** 2
    alphas_cumprod = alphas_cumprod / alphas_cumprod[0]
    betas = 1 - (alphas_cumprod[1:] / alphas_cumprod[:-1])
    return torch.clip(betas, 0, 0.999)


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, t):
        half = self.dim // 2
        emb = math.log(10000) / (half - 1)
        emb = torch.exp(torch.arange(half) * -emb)
        emb = t[:, None].float() * emb[None, :]
        return torch.cat((emb.sin(), emb.cos()), dim=-1)


class Block(nn.Module):
    def __init__(self, dim, dim_out, time_dim):
        super().__init__()
        self.proj = nn.Conv2d(dim, dim_out, 3, padding=1)
        self.norm = nn.GroupNorm(4, dim_out)
        self.time = nn.Linear(time_dim, dim_out * 2)

    def forward(self, x, t_emb):
        scale, shift = self.time(t_emb)[:, :, None, None].chunk(2, dim=1)
        x = self.norm(self.proj(x))
        return F.silu(x * (scale + 1) + shift)


class Unet(nn.Module):
    def __init__(self, dim=16, channels=3, self_condition=True):
        super().__init__()
        self.channels = channels
        self.self_condition = self_condition
        self.init_conv = nn.Conv2d(channels, dim, 7, padding=3)
        self.cond_conv = nn.Conv2d(channels, dim, 7, padding=3)
        time_dim = dim * 4
        self.time_mlp = nn.Sequential(SinusoidalPosEmb(dim), nn.Linear(dim, time_dim), nn.GELU(),
                                      nn.Linear(time_dim, time_dim))
        self.down = Block(dim, dim * 2, time_dim)
        self.mid = Block(dim * 2, dim * 2, time_dim)
        self.up = Block(dim * 3, dim, time_dim)
        self.final_conv = nn.Conv2d(dim, channels, 1)

    def forward(self, x, time, x_self_cond=None):
        if self.self_condition:
            x_self_cond = x_self_cond if x_self_cond is not None else torch.zeros_like(x)
            x = self.init_conv(x) + self.cond_conv(x_self_cond)
        else:
            x = self.init_conv(x)
        r = x
        t = self.time_mlp(time)
        h = self.down(x, t)
        h = F.avg_pool2d(h, 2)
        h = self.mid(h, t)
        h = F.interpolate(h, scale_factor=2, mode="nearest")
        h = self.up(torch.cat((h, r), dim=1), t)
        return self.final_conv(h)


class GaussianDiffusion(nn.Module):
    def __init__(self, model, image_size=8, timesteps=100):
        super().__init__()
        self.model = model
        self.self_condition = model.self_condition
        self.image_size = image_size
        self.num_timesteps = timesteps
        betas = cosine_beta_schedule(timesteps)
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.register_buffer("sqrt_alphas_cumprod", torch.sqrt(alphas_cumprod))
        self.register_buffer("sqrt_one_minus_alphas_cumprod", torch.sqrt(1.0 - alphas_cumprod))
        self.register_buffer("sqrt_recip_alphas_cumprod", torch.sqrt(1.0 / alphas_cumprod))
        self.register_buffer("sqrt_recipm1_alphas_cumprod", torch.sqrt(1.0 / alphas_cumprod - 1))

    def predict_start_from_noise(self, x_t, t, noise):
        return (extract(self.sqrt_recip_alphas_cumprod, t, x_t.shape) * x_t
                - extract(self.sqrt_recipm1_alphas_cumprod, t, x_t.shape) * noise)

    def model_predictions(self, x, t, x_self_cond=None):
        pred_noise = self.model(x, t, x_self_cond)
        x_start = self.predict_start_from_noise(x, t, pred_noise).clamp(-1.0, 1.0)
        return pred_noise, x_start

    def q_sample(self, x_start, t, noise):
        return (extract(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start
                + extract(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise)

    def p_losses(self, x_start, t):
        noise = torch.randn_like(x_start)
        x = self.q_sample(x_start=x_start, t=t, noise=noise)

        # if doing self-conditioning, 50% of the time, predict x_start from current set of times
        # and condition with unet with that
        x_self_cond = None
        if self.self_condition and random.random() < 0.5:
            with torch.no_grad():
                _, x_self_cond = self.model_predictions(x, t)
                x_self_cond.detach_()

        model_out = self.model(x, t, x_self_cond)
        return F.mse_loss(model_out, noise)

    def forward(self, img):
        b = img.shape[0]
        t = torch.randint(0, self.num_timesteps, (b,)).long()
        img = img * 2 - 1  # normalize to [-1, 1]
        return self.p_losses(img, t)


class Trainer:
    def __init__(self, diffusion, images, train_batch_size=16, train_lr=1e-4, train_num_steps=12):
        self.model = diffusion
        self.images = images
        self.batch_size = train_batch_size
        self.train_num_steps = train_num_steps
        self.opt = torch.optim.Adam(diffusion.parameters(), lr=train_lr, betas=(0.9, 0.99))
        self.step = 0

    def next_batch(self):
        idx = torch.randint(0, len(self.images), (self.batch_size,))
        return self.images[idx]

    def train(self):
        while self.step < self.train_num_steps:
            data = self.next_batch()
            loss = self.model(data)
            loss.backward()
            self.opt.step()
            self.opt.zero_grad()
            self.step += 1
            if self.step % 4 == 0:
                print(f"step {self.step}: loss {loss.item():.4f}")


model = Unet(dim=16, self_condition=True)
diffusion = GaussianDiffusion(model, image_size=8, timesteps=100)
images = torch.rand(64, 3, 8, 8)
trainer = Trainer(diffusion, images)
trainer.train()
