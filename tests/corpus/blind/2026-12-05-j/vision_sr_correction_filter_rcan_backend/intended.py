"""Super-resolution: learning a correction filter in front of a fixed pre-trained SR network.

Reduced from https://github.com/shadyabh/Correction-Filter/issues/1: in the blind
setting, a small correction filter is applied to the low-resolution input so that a
pre-trained super-resolution network (here the author's own RCAN model in place of the
repository's DBPN) sees inputs like those it was trained on; the filter is optimised so
that the SR output, degraded back to low resolution, is consistent with the input. Only
the filter is optimised; the SR network stays fixed.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ChannelAttention(nn.Module):
    def __init__(self, channels, reduction=4):
        super().__init__()
        self.body = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(channels, channels // reduction, 1),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels // reduction, channels, 1),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return x * self.body(x)


class RCAB(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1),
            ChannelAttention(channels),
        )

    def forward(self, x):
        return x + self.body(x)


class RCAN(nn.Module):
    def __init__(self, scale=2, channels=16, n_blocks=2):
        super().__init__()
        self.head = nn.Conv2d(3, channels, 3, padding=1)
        self.body = nn.Sequential(*[RCAB(channels) for _ in range(n_blocks)])
        self.tail = nn.Sequential(nn.Conv2d(channels, 3 * scale**2, 3, padding=1), nn.PixelShuffle(scale))

    def forward(self, x):
        x = self.head(x)
        x = x + self.body(x)
        return self.tail(x)


class SRBackend:
    """The author's wrapper that plugs a pre-trained RCAN into the correction-filter code."""

    def __init__(self, model):
        self.model = model.eval()

    def __call__(self, lr):
        return self.model(lr).clamp(0, 1)


class CorrectionFilter(nn.Module):
    def __init__(self, ksize=5):
        super().__init__()
        delta = torch.zeros(1, 1, ksize, ksize)
        delta[..., ksize // 2, ksize // 2] = 1.0
        self.kernel = nn.Parameter(delta.repeat(3, 1, 1, 1))

    def forward(self, x):
        return F.conv2d(x, self.kernel, padding=self.kernel.shape[-1] // 2, groups=3)


def degrade(x, scale=2):
    return F.avg_pool2d(x, scale)


def estimate_correction(sr_net, correction, optimizer, y, iters=10):
    for it in range(iters):
        optimizer.zero_grad()
        R_dag = sr_net(correction(y))
        loss = F.mse_loss(degrade(R_dag), y)
        loss.backward()
        optimizer.step()
        if it % 5 == 0:
            print(f"iter {it} | consistency {loss.item():.5f}")
    return correction


if __name__ == "__main__":
    rcan = RCAN(scale=2)
    for p in rcan.parameters():
        p.requires_grad_(False)
    sr_net = SRBackend(rcan)
    y = torch.rand(2, 3, 16, 16)  # the low-resolution images
    correction = CorrectionFilter()
    optimizer = torch.optim.Adam(correction.parameters(), lr=1e-3)
    estimate_correction(sr_net, correction, optimizer, y)
