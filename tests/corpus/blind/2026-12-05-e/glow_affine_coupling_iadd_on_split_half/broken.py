"""Reduced from https://github.com/chaiyujin/glow-pytorch/pull/6

Training Glow (a normalizing flow on images, maximum likelihood in bits per dimension) with this
repository's FlowStep, the backward failed: the PR's author reports gradients "unable to propagate
through in-place ops" in the coupling layers, and replaced `z2 += shift`, `z2 *= scale` (and
`z2 += self.f(z1)` of the additive coupling) with out-of-place updates. `z1, z2` are the two channel
halves of the same tensor (split_feature returns slices), and the coupling network f has just saved
`z1` for its backward: writing into `z2` bumps the version counter the two halves share, so the
backward finds the saved `z1` "modified by an inplace operation".

Here the same model in miniature: squeeze, K flow steps (ActNorm with data-dependent init, invertible
1x1 conv, affine coupling), a learned-free standard normal prior, trained on random 8x8 images.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def split_feature(tensor, type="split"):
    C = tensor.size(1)
    if type == "split":
        return tensor[:, : C // 2, ...], tensor[:, C // 2:, ...]
    return tensor[:, 0::2, ...], tensor[:, 1::2, ...]


class ActNorm2d(nn.Module):
    def __init__(self, num_features, scale=1.0):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(1, num_features, 1, 1))
        self.logs = nn.Parameter(torch.zeros(1, num_features, 1, 1))
        self.scale = scale
        self.inited = False

    def initialize_parameters(self, x):
        with torch.no_grad():
            bias = -x.mean(dim=[0, 2, 3], keepdim=True)
            vars = ((x + bias) ** 2).mean(dim=[0, 2, 3], keepdim=True)
            logs = torch.log(self.scale / (torch.sqrt(vars) + 1e-6))
            self.bias.data.copy_(bias)
            self.logs.data.copy_(logs)
            self.inited = True

    def forward(self, x, logdet):
        if not self.inited:
            self.initialize_parameters(x)
        x = (x + self.bias) * torch.exp(self.logs)
        return x, logdet + self.logs.sum() * x.size(2) * x.size(3)


class InvertibleConv1x1(nn.Module):
    def __init__(self, num_channels):
        super().__init__()
        w_init = torch.linalg.qr(torch.randn(num_channels, num_channels))[0]
        self.weight = nn.Parameter(w_init)

    def forward(self, x, logdet):
        dlogdet = torch.slogdet(self.weight)[1] * x.size(2) * x.size(3)
        z = F.conv2d(x, self.weight.view(*self.weight.shape, 1, 1))
        return z, logdet + dlogdet


class Conv2dZeros(nn.Conv2d):
    def __init__(self, in_channels, out_channels, logscale_factor=3):
        super().__init__(in_channels, out_channels, 3, padding=1)
        self.logscale_factor = logscale_factor
        self.logs = nn.Parameter(torch.zeros(out_channels, 1, 1))
        self.weight.data.zero_()
        self.bias.data.zero_()

    def forward(self, x):
        return super().forward(x) * torch.exp(self.logs * self.logscale_factor)


def f(in_channels, out_channels, hidden_channels):
    return nn.Sequential(
        nn.Conv2d(in_channels, hidden_channels, 3, padding=1), nn.ReLU(inplace=False),
        nn.Conv2d(hidden_channels, hidden_channels, 1), nn.ReLU(inplace=False),
        Conv2dZeros(hidden_channels, out_channels))


class FlowStep(nn.Module):
    def __init__(self, in_channels, hidden_channels):
        super().__init__()
        self.actnorm = ActNorm2d(in_channels)
        self.invconv = InvertibleConv1x1(in_channels)
        self.f = f(in_channels // 2, in_channels, hidden_channels)

    def forward(self, input, logdet):
        z, logdet = self.actnorm(input, logdet)
        z, logdet = self.invconv(z, logdet)
        # affine coupling
        z1, z2 = split_feature(z, "split")
        h = self.f(z1)
        shift, scale = split_feature(h, "cross")
        scale = torch.sigmoid(scale + 2.)
        z2 += shift
        z2 *= scale
        logdet = torch.log(scale).sum(dim=[1, 2, 3]) + logdet
        z = torch.cat((z1, z2), dim=1)
        return z, logdet


def squeeze2d(x, factor=2):
    B, C, H, W = x.shape
    x = x.view(B, C, H // factor, factor, W // factor, factor)
    x = x.permute(0, 1, 3, 5, 2, 4).contiguous()
    return x.view(B, C * factor * factor, H // factor, W // factor)


class Glow(nn.Module):
    def __init__(self, image_shape=(3, 8, 8), hidden_channels=32, K=4):
        super().__init__()
        C, H, W = image_shape
        self.steps = nn.ModuleList([FlowStep(C * 4, hidden_channels) for _ in range(K)])

    def forward(self, x):
        pixels = x.size(1) * x.size(2) * x.size(3)
        z = x + torch.rand_like(x) / 256.0  # dequantize
        logdet = torch.full((x.size(0),), -math.log(256.0) * pixels)
        z = squeeze2d(z)
        for step in self.steps:
            z, logdet = step(z, logdet)
        log_p = (-0.5 * (math.log(2 * math.pi) + z ** 2)).sum(dim=[1, 2, 3])
        nll = -(log_p + logdet)
        return nll / (math.log(2.0) * pixels)  # bits per dimension


class Trainer:
    def __init__(self, graph, data, batch_size=16, lr=1e-3):
        self.graph = graph
        self.data = data
        self.batch_size = batch_size
        self.optim = torch.optim.Adam(graph.parameters(), lr=lr)

    def train(self, epochs):
        for epoch in range(epochs):
            for i in range(0, len(self.data), self.batch_size):
                x = self.data[i:i + self.batch_size]
                nll = self.graph(x)
                loss_generative = nll.mean()
                self.optim.zero_grad()
                loss_generative.backward()
                self.optim.step()
            print(f"epoch {epoch}: bpd {loss_generative.item():.3f}")


images = torch.randint(0, 256, (64, 3, 8, 8)).float() / 255.0 - 0.5
graph = Glow()
trainer = Trainer(graph, images)
trainer.train(epochs=3)
