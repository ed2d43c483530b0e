"""Super-resolution with a perceptual loss: a frozen feature network maps both the upscaled output and the
high-resolution target, under one no_grad block that rebinds the output's own name."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Upscaler(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 12, 3, padding=1), nn.ReLU(), nn.Conv2d(12, 12, 3, padding=1))
        self.shuffle = nn.PixelShuffle(2)

    def forward(self, x):
        return self.shuffle(self.body(x)) + F.interpolate(x, scale_factor=2.0)


features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1)).requires_grad_(False)


def train(upscaler, pairs, epochs=2):
    opt = torch.optim.SGD(upscaler.parameters(), lr=0.05)
    for _ in range(epochs):
        for low, high in pairs:
            sr = upscaler(low)
            with torch.no_grad():
                sr = features(sr)
                high = features(high)
            perceptual = F.mse_loss(sr, high)
            opt.zero_grad()
            perceptual.backward()
            opt.step()


data = [(torch.rand(2, 3, 8, 8), torch.rand(2, 3, 16, 16)) for _ in range(3)]
train(Upscaler(), data)
