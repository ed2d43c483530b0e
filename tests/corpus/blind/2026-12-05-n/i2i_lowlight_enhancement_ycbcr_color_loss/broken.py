"""Low-light image enhancement network trained with an RGB L1 loss plus a YCbCr luminance/chroma loss.

Reduced from https://github.com/jorge-pessoa/pytorch-colors/issues/7: the author converts the
network's RGB output to YCbCr with pytorch-colors' `rgb_to_ycbcr` (inlined below the way the
package implements it: NHWC numpy array, skimage's rgb2ycbcr matrix, back to a tensor) inside
the loss of a deep network. Synthetic dark/bright image pairs, CPU; numpy as in the report.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

# skimage.color.rgb2ycbcr for RGB in [0, 1]
_YCBCR_FROM_RGB = np.array(
    [[65.481, 128.553, 24.966], [-37.797, -74.203, 112.0], [112.0, -93.786, -18.214]], dtype=np.float64
)
_YCBCR_OFFSET = np.array([16.0, 128.0, 128.0])


def rgb_to_ycbcr(input_):
    """pytorch_colors.rgb_to_ycbcr: (N, 3, H, W) RGB in [0, 1] -> (N, 3, H, W) YCbCr."""
    arr = input_.permute(0, 2, 3, 1).numpy()
    transformed = arr @ _YCBCR_FROM_RGB.T + _YCBCR_OFFSET
    return torch.from_numpy(transformed).float().permute(0, 3, 1, 2)


class EnhanceNet(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.head = nn.Conv2d(3, ch, 3, padding=1)
        self.body = nn.Sequential(nn.ReLU(), nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU(), nn.Conv2d(ch, ch, 3, padding=1))
        self.tail = nn.Conv2d(ch, 3, 3, padding=1)

    def forward(self, x):
        h = self.head(x)
        h = h + self.body(h)
        return torch.sigmoid(self.tail(h) + torch.logit(x.clamp(1e-3, 1 - 1e-3)))


class ColorLoss(nn.Module):
    """L1 in RGB plus L1 in YCbCr (Y weighted more), the usual enhancement recipe."""

    def __init__(self, w_y=1.0, w_c=0.5):
        super().__init__()
        self.w_y, self.w_c = w_y, w_c

    def forward(self, output, target):
        rgb = F.l1_loss(output, target)
        out_ycc = rgb_to_ycbcr(output) / 255.0
        tgt_ycc = rgb_to_ycbcr(target) / 255.0
        y = F.l1_loss(out_ycc[:, :1], tgt_ycc[:, :1])
        c = F.l1_loss(out_ycc[:, 1:], tgt_ycc[:, 1:])
        return rgb + self.w_y * y + self.w_c * c


def paired_batches(n, batch_size=4, size=16):
    for _ in range(n):
        bright = torch.rand(batch_size, 3, size, size) * 0.6 + 0.3
        gamma = 2.0 + torch.rand(batch_size, 1, 1, 1)
        dark = (bright**gamma) * 0.5
        yield dark, bright


def train_epoch(net, loader, criterion, optimizer):
    net.train()
    for step, (low, high) in enumerate(loader):
        enhanced = net(low)
        loss = criterion(enhanced, high)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    net = EnhanceNet()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    criterion = ColorLoss()
    for epoch in range(2):
        train_epoch(net, paired_batches(3), criterion, optimizer)
