"""Learned image compression (hyperprior entropy model, auxiliary loss with its own optimizer).

Report: https://github.com/lucidrains/denoising-diffusion-pytorch/issues/109
The reporter's training failed with "Trying to backward through the graph a second time" on the
second ``loss.backward()``; the cause, found by the reporter: "I use a conv1D() to convert my data
to the shape of the network's input, which is out of the training loop". The converted data carried
that conv's graph into every iteration, and the first backward freed it. The fix: do the conversion
inside the loop.
The training setting is the writer's: grayscale crops are lifted to the three channels a hyperprior
codec expects by a 1x1 convolution applied once to the whole dataset before the loop; the codec is
trained on rate + lambda * distortion with one optimizer, and the entropy bottleneck's quantiles on
the auxiliary loss with a second optimizer, as in CompressAI's example trainer.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N, M, BATCH, LMBDA = 8, 12, 4, 0.01


class FactorizedBottleneck(nn.Module):
    """Per-channel logistic CDF for z, with quantiles trained only by the auxiliary loss."""

    def __init__(self, channels):
        super().__init__()
        self.log_scale = nn.Parameter(torch.zeros(channels, 1, 1))
        self.bias = nn.Parameter(torch.zeros(channels, 1, 1))
        self.quantiles = nn.Parameter(torch.tensor([-10.0, 0.0, 10.0]).repeat(channels, 1, 1))
        self.register_buffer("target", torch.tensor([-math.log(2 / 1e-9 - 1), 0.0, math.log(2 / 1e-9 - 1)]))

    def logits_cumulative(self, x, stop_gradient=False):
        log_scale, bias = self.log_scale, self.bias
        if stop_gradient:
            log_scale, bias = log_scale.detach(), bias.detach()
        return F.softplus(log_scale) * x + bias

    def forward(self, z):
        z_hat = z + torch.empty_like(z).uniform_(-0.5, 0.5)
        lower = self.logits_cumulative(z_hat - 0.5)
        upper = self.logits_cumulative(z_hat + 0.5)
        likelihood = (torch.sigmoid(upper) - torch.sigmoid(lower)).clamp_min(1e-9)
        return z_hat, likelihood

    def aux_loss(self):
        logits = self.logits_cumulative(self.quantiles, stop_gradient=True)
        return (logits - self.target).abs().sum()


class ScaleHyperprior(nn.Module):
    def __init__(self):
        super().__init__()
        self.g_a = nn.Sequential(nn.Conv2d(3, N, 5, 2, 2), nn.GELU(), nn.Conv2d(N, M, 5, 2, 2))
        self.g_s = nn.Sequential(nn.ConvTranspose2d(M, N, 5, 2, 2, 1), nn.GELU(), nn.ConvTranspose2d(N, 3, 5, 2, 2, 1))
        self.h_a = nn.Sequential(nn.Conv2d(M, N, 3, 1, 1), nn.GELU(), nn.Conv2d(N, N, 5, 2, 2))
        self.h_s = nn.Sequential(nn.ConvTranspose2d(N, N, 5, 2, 2, 1), nn.GELU(), nn.Conv2d(N, M, 3, 1, 1))
        self.entropy_bottleneck = FactorizedBottleneck(N)

    def forward(self, x):
        y = self.g_a(x)
        z = self.h_a(y.abs())
        z_hat, z_likelihood = self.entropy_bottleneck(z)
        scales = F.softplus(self.h_s(z_hat)) + 0.11
        y_hat = y + torch.empty_like(y).uniform_(-0.5, 0.5)
        gauss = torch.distributions.Normal(0.0, scales)
        y_likelihood = (gauss.cdf(y_hat + 0.5) - gauss.cdf(y_hat - 0.5)).clamp_min(1e-9)
        return self.g_s(y_hat), y_likelihood, z_likelihood


def rate_distortion(x, x_hat, y_lik, z_lik):
    num_pixels = x.shape[0] * x.shape[2] * x.shape[3]
    bpp = (torch.log(y_lik).sum() + torch.log(z_lik).sum()) / (-math.log(2) * num_pixels)
    mse = F.mse_loss(x_hat, x)
    return LMBDA * 255 ** 2 * mse + bpp, bpp, mse


gray = torch.rand(32, 1, 16, 16).cumsum(-1).cumsum(-2)
gray = gray / gray.amax(dim=(2, 3), keepdim=True)

lift = nn.Conv2d(1, 3, kernel_size=1)

net = ScaleHyperprior()
main_params = [p for n, p in net.named_parameters() if not n.endswith("quantiles")]
aux_params = [p for n, p in net.named_parameters() if n.endswith("quantiles")]
optimizer = torch.optim.Adam(main_params, lr=1e-3)
aux_optimizer = torch.optim.Adam(aux_params, lr=1e-2)

for epoch in range(2):
    for i in range(0, gray.shape[0], BATCH):
        x = lift(gray[i:i + BATCH])  # the codec reads three channels
        optimizer.zero_grad()
        aux_optimizer.zero_grad()
        x_hat, y_lik, z_lik = net(x)
        loss, bpp, mse = rate_distortion(x, x_hat, y_lik, z_lik)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(main_params, 1.0)
        optimizer.step()
        aux_loss = net.entropy_bottleneck.aux_loss()
        aux_loss.backward()
        aux_optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.3f} bpp {bpp.item():.3f} mse {mse.item():.4f} aux {aux_loss.item():.2f}")
