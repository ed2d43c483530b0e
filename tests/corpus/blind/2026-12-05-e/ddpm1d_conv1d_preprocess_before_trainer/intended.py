"""Reduced from https://github.com/lucidrains/denoising-diffusion-pytorch/issues/109

The author ran the repository's Trainer example on their own data and got "Trying to backward
through the graph a second time" on the second loss.backward(); the first one went through. Their
own diagnosis, which closed the issue: "I use a conv1D() to convert my data to the shape of the
network's input, which is out of the training loop." The converted training set was built with
grad enabled by a Conv1d that nothing trains, so every batch the Trainer draws from it is a slice of
one graph, and the first backward freed that graph's saved tensors.

Here the same set-up in miniature: raw multichannel sequences are mapped to the U-Net's channel count
by an nn.Conv1d once, wrapped in a Dataset, and a 1-D DDPM is trained on batches drawn from it.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)


def extract(a, t, x_shape):
    out = a.gather(-1, t)
    return out.reshape(t.shape[0], *((1,) * (len(x_shape) - 1)))


def linear_beta_schedule(timesteps):
    scale = 1000 / timesteps
    return torch.linspace(scale * 0.0001, scale * 0.02, timesteps)


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, t):
        half = self.dim // 2
        emb = torch.exp(torch.arange(half) * -(math.log(10000) / (half - 1)))
        emb = t[:, None].float() * emb[None, :]
        return torch.cat((emb.sin(), emb.cos()), dim=-1)


class ResnetBlock1D(nn.Module):
    def __init__(self, dim, dim_out, time_dim):
        super().__init__()
        self.mlp = nn.Linear(time_dim, dim_out)
        self.block1 = nn.Conv1d(dim, dim_out, 3, padding=1)
        self.block2 = nn.Conv1d(dim_out, dim_out, 3, padding=1)
        self.res_conv = nn.Conv1d(dim, dim_out, 1) if dim != dim_out else nn.Identity()

    def forward(self, x, t_emb):
        h = F.silu(self.block1(x)) + self.mlp(t_emb)[:, :, None]
        h = F.silu(self.block2(h))
        return h + self.res_conv(x)


class Unet1D(nn.Module):
    def __init__(self, dim=16, channels=2):
        super().__init__()
        self.channels = channels
        time_dim = dim * 4
        self.init_conv = nn.Conv1d(channels, dim, 7, padding=3)
        self.time_mlp = nn.Sequential(SinusoidalPosEmb(dim), nn.Linear(dim, time_dim), nn.GELU(),
                                      nn.Linear(time_dim, time_dim))
        self.down = ResnetBlock1D(dim, dim * 2, time_dim)
        self.mid = ResnetBlock1D(dim * 2, dim * 2, time_dim)
        self.up = ResnetBlock1D(dim * 3, dim, time_dim)
        self.final_conv = nn.Conv1d(dim, channels, 1)

    def forward(self, x, time):
        x = self.init_conv(x)
        r = x
        t = self.time_mlp(time)
        h = F.avg_pool1d(self.down(x, t), 2)
        h = F.interpolate(self.mid(h, t), scale_factor=2, mode="nearest")
        return self.final_conv(self.up(torch.cat((h, r), dim=1), t))


class GaussianDiffusion1D(nn.Module):
    def __init__(self, model, seq_length, timesteps=100):
        super().__init__()
        self.model = model
        self.seq_length = seq_length
        self.num_timesteps = timesteps
        alphas_cumprod = torch.cumprod(1.0 - linear_beta_schedule(timesteps), dim=0)
        self.register_buffer("sqrt_alphas_cumprod", torch.sqrt(alphas_cumprod))
        self.register_buffer("sqrt_one_minus_alphas_cumprod", torch.sqrt(1.0 - alphas_cumprod))

    def q_sample(self, x_start, t, noise):
        return (extract(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start
                + extract(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise)

    def p_losses(self, x_start, t):
        noise = torch.randn_like(x_start)
        x = self.q_sample(x_start, t, noise)
        return F.mse_loss(self.model(x, t), noise)

    def forward(self, seq):
        t = torch.randint(0, self.num_timesteps, (seq.shape[0],)).long()
        return self.p_losses(seq, t)


class Dataset1D(Dataset):
    def __init__(self, tensor):
        self.tensor = tensor

    def __len__(self):
        return len(self.tensor)

    def __getitem__(self, idx):
        return self.tensor[idx]


class Trainer1D:
    def __init__(self, diffusion_model, dataset, train_batch_size=16, train_lr=1e-4, train_num_steps=12):
        self.model = diffusion_model
        self.dl = DataLoader(dataset, batch_size=train_batch_size, shuffle=True, drop_last=True)
        self.opt = torch.optim.Adam(diffusion_model.parameters(), lr=train_lr, betas=(0.9, 0.99))
        self.train_num_steps = train_num_steps
        self.step = 0

    def cycle(self):
        while True:
            for data in self.dl:
                yield data

    def train(self):
        batches = self.cycle()
        while self.step < self.train_num_steps:
            data = next(batches)
            loss = self.model(data)
            loss.backward()
            self.opt.step()
            self.opt.zero_grad()
            self.step += 1
            if self.step % 4 == 0:
                print(f"step {self.step}: loss {loss.item():.4f}")


# my data: 64 sequences of 5 sensor channels, 32 steps; the U-Net takes 2 channels
raw = torch.randn(64, 5, 32)
to_channels = nn.Conv1d(5, 2, kernel_size=1)
with torch.no_grad():
    training_seq = to_channels(raw)

model = Unet1D(dim=16, channels=2)
diffusion = GaussianDiffusion1D(model, seq_length=32, timesteps=100)
dataset = Dataset1D(training_seq)
trainer = Trainer1D(diffusion, dataset)
trainer.train()
