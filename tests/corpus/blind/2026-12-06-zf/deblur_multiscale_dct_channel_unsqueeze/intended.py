"""Multi-scale coarse-to-fine deblurring with a blockwise-DCT frequency loss.

Source: https://github.com/ando-khachatryan/HiDDeN/issues/23
The report: HiDDeN's differentiable JPEG layer applied a fixed 8x8 DCT filter bank to each
YUV channel in a loop, taking the channel with ``image[:, channel, :, :].unsqueeze_(1)``.
The in-place unsqueeze on a slice bumps the version of the whole image, so the slice that
the previous channel's conv2d saved is "modified by an inplace operation" and backward
fails; the answer was to clone the slice before the convolution. Here the author trains a
DeepDeblur-style three-scale network (each scale sees the blurred image and the upsampled
restoration of the coarser scale and predicts a residual) and adds a JPEG-style
frequency loss that compares blockwise DCT coefficients of restored and sharp images,
written with the same per-channel loop. The training setting is the writer's.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

SCALES, BATCH, SIZE, STEPS = 3, 2, 32, 4


def dct_filters(n=8):
    """The 64 8x8 DCT-II basis images as a (64, 1, 8, 8) conv weight."""
    k = torch.arange(n, dtype=torch.float32)
    basis = torch.cos(math.pi / n * (k[None, :] + 0.5) * k[:, None])  # (freq, pos)
    filt = basis[:, None, :, None] * basis[None, :, None, :]  # (fy, fx, y, x)
    return filt.reshape(n * n, 1, n, n)


class ResBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.c1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.c2 = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x):
        return x + self.c2(F.relu(self.c1(x)))


class ScaleNet(nn.Module):
    """One level of the pyramid: blurred image + coarser estimate -> residual."""

    def __init__(self, ch=16):
        super().__init__()
        self.head = nn.Conv2d(6, ch, 3, padding=1)
        self.body = nn.Sequential(ResBlock(ch), ResBlock(ch))
        self.tail = nn.Conv2d(ch, 3, 3, padding=1)

    def forward(self, blurred, coarse):
        return blurred + self.tail(self.body(F.relu(self.head(torch.cat([blurred, coarse], 1)))))


class MultiScaleDeblur(nn.Module):
    def __init__(self):
        super().__init__()
        self.levels = nn.ModuleList([ScaleNet() for _ in range(SCALES)])

    def forward(self, blurred):
        pyramid = [F.interpolate(blurred, scale_factor=0.5 ** s, mode="bilinear", align_corners=False)
                   for s in reversed(range(SCALES))]
        outputs, estimate = [], pyramid[0]
        for level, b in zip(self.levels, pyramid):
            if estimate.shape[-1] != b.shape[-1]:
                estimate = F.interpolate(estimate, size=b.shape[-2:], mode="bilinear", align_corners=False)
            estimate = level(b, estimate)
            outputs.append(estimate)
        return outputs  # coarse to fine


DCT = dct_filters()


def blockwise_dct(image):
    """Per-channel 8x8 DCT coefficients, as in HiDDeN's JPEG noise layer."""
    coeffs = []
    for channel in range(image.shape[1]):
        # clone the slice before the convolution (the fix): no in-place unsqueeze on a view
        image_ch = image[:, channel, :, :].clone().unsqueeze(1)
        coeffs.append(F.conv2d(image_ch, DCT, stride=8))
    return torch.cat(coeffs, dim=1)


def blur(images):
    kernel = torch.ones(3, 1, 1, 5) / 5.0  # horizontal motion blur
    return F.conv2d(F.pad(images, (2, 2, 0, 0), mode="replicate"), kernel, groups=3)


model = MultiScaleDeblur()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(STEPS):
    sharp = torch.rand(BATCH, 3, SIZE, SIZE)
    blurred = blur(sharp) + 0.01 * torch.randn(BATCH, 3, SIZE, SIZE)

    outputs = model(blurred)
    loss_content = 0.0
    for s, out in enumerate(outputs):
        target = F.interpolate(sharp, size=out.shape[-2:], mode="bilinear", align_corners=False)
        loss_content = loss_content + F.l1_loss(out, target)
    restored = outputs[-1]
    loss_freq = F.l1_loss(blockwise_dct(restored), blockwise_dct(sharp))
    loss = loss_content + 0.1 * loss_freq

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: content {loss_content.item():.4f} freq {loss_freq.item():.4f}")
