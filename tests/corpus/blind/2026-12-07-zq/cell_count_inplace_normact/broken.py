"""Microscopy cell counting: density-map regression with a memory-saving fused norm+activation op.

Source: https://github.com/mapillary/inplace_abn/issues/14

The reporter trained a network built with In-Place Activated BatchNorm (a custom autograd
function that keeps only its *output* for backward and reconstructs the normalised input
from it, to save memory) and got "one of the variables needed for gradient computation has
been modified by an inplace operation". They first suspected the running-stat updates inside
the function; the cause they found was "an inplace residual connection": the residual add
was done in place on the output of the InPlaceABN layer, which that layer had saved for its
backward.

Reduction: a small fully convolutional counter regresses a cell density map from synthetic
fluorescence images (Gaussian blobs); the count is the map's integral. Each conv is followed
by ``FusedNormAct``, a custom ``autograd.Function`` that, like InPlaceABN, saves its output
and inverts the leaky ReLU and the affine in backward. The residual blocks add their shortcut
in place onto that output.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

CFG = {"n_images": 8, "size": 24, "channels": 12, "blocks": 2, "slope": 0.01, "lr": 1e-3, "epochs": 3}


def synth_microscopy(n, size):
    """Images with 3-9 Gaussian cells each and the matching density map (sums to the cell count)."""
    yy, xx = torch.meshgrid(torch.arange(size).float(), torch.arange(size).float(), indexing="ij")
    images, densities = [], []
    for _ in range(n):
        k = int(torch.randint(3, 10, (1,)))
        centres = torch.rand(k, 2) * (size - 4) + 2
        d2 = (yy[None] - centres[:, 0, None, None]) ** 2 + (xx[None] - centres[:, 1, None, None]) ** 2
        blobs = torch.exp(-d2 / 4.0)
        density = blobs / blobs.sum(dim=(1, 2), keepdim=True)
        images.append(blobs.sum(0) + 0.05 * torch.randn(size, size))
        densities.append(density.sum(0))
    return torch.stack(images)[:, None], torch.stack(densities)[:, None]


class FusedNormAct(torch.autograd.Function):
    """Batch norm + affine + leaky ReLU that stores only its output for backward."""

    @staticmethod
    def forward(ctx, x, weight, bias, slope, eps=1e-5):
        dims = (0, 2, 3)
        mean = x.mean(dim=dims, keepdim=True)
        var = x.var(dim=dims, unbiased=False, keepdim=True)
        w, b = weight.view(1, -1, 1, 1), bias.view(1, -1, 1, 1)
        y = (x - mean) / torch.sqrt(var + eps) * w + b
        out = F.leaky_relu(y, slope)
        ctx.slope, ctx.eps = slope, eps
        ctx.save_for_backward(out, weight, bias, var)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        out, weight, bias, var = ctx.saved_tensors
        dims = (0, 2, 3)
        w, b = weight.view(1, -1, 1, 1), bias.view(1, -1, 1, 1)
        pos = out >= 0
        y = torch.where(pos, out, out / ctx.slope)
        grad_y = grad_out * torch.where(pos, torch.ones_like(out), torch.full_like(out, ctx.slope))
        xhat = (y - b) / w
        grad_w = (grad_y * xhat).sum(dim=dims)
        grad_b = grad_y.sum(dim=dims)
        g = grad_y * w
        grad_x = (g - g.mean(dim=dims, keepdim=True) - xhat * (g * xhat).mean(dim=dims, keepdim=True))
        grad_x = grad_x / torch.sqrt(var + ctx.eps)
        return grad_x, grad_w, grad_b, None, None


class ConvNormAct(nn.Module):
    def __init__(self, cin, cout, slope):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.weight = nn.Parameter(torch.ones(cout))
        self.bias = nn.Parameter(torch.zeros(cout))
        self.slope = slope

    def forward(self, x):
        return FusedNormAct.apply(self.conv(x), self.weight, self.bias, self.slope)


class ResidualBlock(nn.Module):
    def __init__(self, channels, slope):
        super().__init__()
        self.a = ConvNormAct(channels, channels, slope)
        self.b = ConvNormAct(channels, channels, slope)

    def forward(self, x):
        out = self.b(self.a(x))
        out += x
        return out


class DensityCounter(nn.Module):
    def __init__(self, channels, blocks, slope):
        super().__init__()
        self.stem = ConvNormAct(1, channels, slope)
        self.blocks = nn.Sequential(*[ResidualBlock(channels, slope) for _ in range(blocks)])
        self.to_density = nn.Conv2d(channels, 1, 1)

    def forward(self, img):
        return F.softplus(self.to_density(self.blocks(self.stem(img))))


def run_epoch(counter, optimizer, images, densities):
    pred = counter(images)
    map_loss = F.mse_loss(pred, densities) * 100.0
    count_loss = F.l1_loss(pred.sum(dim=(1, 2, 3)), densities.sum(dim=(1, 2, 3)))
    loss = map_loss + 0.1 * count_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return map_loss.item(), count_loss.item()


def main():
    images, densities = synth_microscopy(CFG["n_images"], CFG["size"])
    counter = DensityCounter(CFG["channels"], CFG["blocks"], CFG["slope"])
    optimizer = torch.optim.AdamW(counter.parameters(), lr=CFG["lr"])
    for epoch in range(CFG["epochs"]):
        m, c = run_epoch(counter, optimizer, images, densities)
        print(f"epoch {epoch}: density mse {m:.4f}  count mae {c:.3f}")


if __name__ == "__main__":
    main()
