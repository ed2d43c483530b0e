"""Pollen-allergy forecasting with a hand-written smoothing op over daily weather features.

Source: https://github.com/rosinality/style-based-gan-pytorch/issues/130 . The StyleGAN code
blurs feature maps with a custom autograd Function (BlurFunction) whose forward saves the blur
kernels, registered buffers of the module, with ctx.save_for_backward; the reporter's
backward failed at `kernel, kernel_flip = ctx.saved_tensors` with "one of the variables
needed for gradient computation has been modified by an inplace operation:
[torch.FloatTensor [512, 1, 3, 3]] is at version 4; expected version 3": the kernel buffer
had been written in place after the forward that saved it.

Reduction: the writer's setting is a daily grass-pollen forecast for allergy warnings. A
custom Function smooths the encoder's daily features with a Gaussian kernel kept as a module buffer;
the kernel's width depends on the season phase, so the module refreshes the buffer in place
(copy_) on every call. The training step calls the model twice (a next-day and a two-day
horizon, each with its own phase) before one backward of the summed loss.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

CFG = {
    "weather_vars": 5,
    "window": 21,
    "kernel_size": 7,
    "hidden": 32,
    "days": 400,
    "batch": 32,
    "steps": 10,
    "lr": 1e-3,
}


class GaussianSmooth(torch.autograd.Function):
    @staticmethod
    def forward(ctx, series, kernel):
        channels = series.shape[1]
        weight = kernel.view(1, 1, -1).expand(channels, 1, -1)
        ctx.save_for_backward(kernel)
        ctx.channels = channels
        return F.conv1d(series, weight, padding=kernel.numel() // 2, groups=channels)

    @staticmethod
    def backward(ctx, grad_out):
        (kernel,) = ctx.saved_tensors
        weight = kernel.flip(0).view(1, 1, -1).expand(ctx.channels, 1, -1)
        grad_series = F.conv1d(grad_out, weight, padding=kernel.numel() // 2, groups=ctx.channels)
        return grad_series, None


def gaussian(size, width):
    t = torch.arange(size, dtype=torch.float32) - size // 2
    k = torch.exp(-0.5 * (t / width) ** 2)
    return k / k.sum()


class PhenologySmoother(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = size
        self.register_buffer("kernel", gaussian(size, 1.0))

    def forward(self, series, phase):
        width = 0.8 + 1.5 * (1 - math.cos(2 * math.pi * phase)) / 2
        self.kernel = gaussian(self.size, width)
        return GaussianSmooth.apply(series, self.kernel)


class PollenForecaster(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.conv = nn.Conv1d(cfg["weather_vars"], cfg["hidden"], 5, padding=2)
        self.smoother = PhenologySmoother(cfg["kernel_size"])
        self.head = nn.Linear(cfg["hidden"] + 1, 1)

    def forward(self, weather, phase):
        h = self.smoother(F.relu(self.conv(weather)), phase)
        h = h.mean(dim=2)
        season = torch.full((h.shape[0], 1), math.sin(2 * math.pi * phase))
        return F.softplus(self.head(torch.cat([h, season], dim=1))).squeeze(-1)


def simulate(cfg):
    days = torch.arange(cfg["days"], dtype=torch.float32)
    weather = torch.randn(cfg["weather_vars"], cfg["days"]).cumsum(1) * 0.1
    weather[0] += torch.sin(2 * math.pi * days / 365)
    bloom = torch.exp(-((days % 365 - 150) / 25) ** 2)
    counts = 60 * bloom * torch.sigmoid(weather[0] + 0.5 * weather[1]) + torch.rand(cfg["days"])
    return weather, counts


def draw_batch(weather, counts, cfg, horizon):
    starts = torch.randint(0, cfg["days"] - cfg["window"] - 2, (cfg["batch"],))
    windows = torch.stack([weather[:, s:s + cfg["window"]] for s in starts])
    target_day = starts + cfg["window"] - 1 + horizon
    phase = (target_day.float().mean().item() % 365) / 365
    return windows, counts[target_day], phase


def main():
    weather, counts = simulate(CFG)
    model = PollenForecaster(CFG)
    opt = torch.optim.Adam(model.parameters(), lr=CFG["lr"])
    for step in range(CFG["steps"]):
        x1, y1, phase1 = draw_batch(weather, counts, CFG, horizon=1)
        x2, y2, phase2 = draw_batch(weather, counts, CFG, horizon=2)
        nll_next = F.poisson_nll_loss(model(x1, phase1), y1, log_input=False)
        nll_two = F.poisson_nll_loss(model(x2, phase2), y2, log_input=False)
        loss = nll_next + 0.5 * nll_two
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 3 == 0:
            print(f"step {step}: next-day {nll_next.item():.3f}  two-day {nll_two.item():.3f}")


if __name__ == "__main__":
    main()
