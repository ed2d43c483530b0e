"""Weed-versus-crop segmentation of multispectral drone tiles with a small MultiResUNet.

Reduced from j-sripad/mulitresunet-pytorch issue #3, "Inplace operation cus bug"
(https://github.com/j-sripad/mulitresunet-pytorch/issues/3). The reporter trained the
repository's MultiResUNet and hit "RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation"; they traced it to the several
`x += shortcut` lines of the model and reported that writing them as `x = x + shortcut`
solves it. In the repository's `Respath`, `x = self.conv2d_bn_3x3(x)` ends in `F.relu`,
whose backward needs its own output, and `x += shortcut` then overwrites that output.

Reduction: the same Conv2d_batchnorm / Multiresblock / Respath structure (fewer filters,
two levels) segments 5-band drone tiles (R, G, B, red-edge, NIR) into soil / crop / weed
masks for a spot-spraying planner. Training runs Adam over a few epochs of synthetic tiles;
the first `loss.backward()` fails on the in-place residual add inside `Respath`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

HPARAMS = {
    "bands": 5,
    "classes": 3,          # soil, crop, weed
    "filters": 8,
    "tile": 32,
    "tiles": 32,
    "batch_size": 8,
    "epochs": 2,
    "lr": 2e-3,
}


class ConvBN(nn.Module):
    def __init__(self, cin, cout, k=3, act=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, padding=k // 2)
        self.bn = nn.BatchNorm2d(cout)
        self.act = act

    def forward(self, x):
        x = self.bn(self.conv(x))
        return F.relu(x) if self.act else x


class MultiResBlock(nn.Module):
    def __init__(self, cin, unet_filters, alpha=1.67):
        super().__init__()
        w = unet_filters * alpha
        f3, f5, f7 = int(w * 0.167), int(w * 0.333), int(w * 0.5)
        self.out_channels = f3 + f5 + f7
        self.shortcut = ConvBN(cin, self.out_channels, k=1, act=False)
        self.c3 = ConvBN(cin, f3)
        self.c5 = ConvBN(f3, f5)
        self.c7 = ConvBN(f5, f7)
        self.bn = nn.BatchNorm2d(self.out_channels)

    def forward(self, x):
        short = self.shortcut(x)
        a = self.c3(x)
        b = self.c5(a)
        c = self.c7(b)
        out = self.bn(torch.cat([a, b, c], dim=1))
        out = out + short
        return F.relu(self.bn(out))


class ResPath(nn.Module):
    def __init__(self, cin, filters, length):
        super().__init__()
        self.length = length
        self.short0 = ConvBN(cin, filters, k=1, act=False)
        self.conv0 = ConvBN(cin, filters)
        self.shorts = nn.ModuleList(ConvBN(filters, filters, k=1, act=False) for _ in range(length - 1))
        self.convs = nn.ModuleList(ConvBN(filters, filters) for _ in range(length - 1))
        self.bn = nn.BatchNorm2d(filters)

    def forward(self, x):
        shortcut = self.short0(x)
        x = self.conv0(x)
        x = x + shortcut
        x = self.bn(F.relu(x))
        for short, conv in zip(self.shorts, self.convs):
            shortcut = short(x)
            x = conv(x)
            x = x + shortcut
            x = self.bn(F.relu(x))
        return x


class WeedMultiResUNet(nn.Module):
    def __init__(self, bands, classes, filters):
        super().__init__()
        self.enc1 = MultiResBlock(bands, filters)
        self.path1 = ResPath(self.enc1.out_channels, filters, length=2)
        self.enc2 = MultiResBlock(self.enc1.out_channels, filters * 2)
        self.up = nn.ConvTranspose2d(self.enc2.out_channels, filters, 2, stride=2)
        self.dec1 = MultiResBlock(filters * 2, filters)
        self.head = nn.Conv2d(self.dec1.out_channels, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        d1 = torch.cat([self.up(e2), self.path1(e1)], dim=1)
        return self.head(self.dec1(d1))


def make_tiles(n, bands, size):
    spectra = torch.rand(n, bands, size, size)
    ndvi = (spectra[:, 4] - spectra[:, 0]) / (spectra[:, 4] + spectra[:, 0] + 1e-6)
    masks = torch.zeros(n, size, size, dtype=torch.long)
    masks[ndvi > 0.2] = 1
    masks[(ndvi > 0.2) & (spectra[:, 3] > 0.6)] = 2
    return spectra, masks


def train_epoch(model, optimizer, tiles, masks, batch_size):
    model.train()
    total = 0.0
    order = torch.randperm(tiles.shape[0])
    for start in range(0, tiles.shape[0], batch_size):
        idx = order[start:start + batch_size]
        logits = model(tiles[idx])
        loss = F.cross_entropy(logits, masks[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


def main():
    tiles, masks = make_tiles(HPARAMS["tiles"], HPARAMS["bands"], HPARAMS["tile"])
    model = WeedMultiResUNet(HPARAMS["bands"], HPARAMS["classes"], HPARAMS["filters"])
    optimizer = torch.optim.Adam(model.parameters(), lr=HPARAMS["lr"])
    for epoch in range(HPARAMS["epochs"]):
        total = train_epoch(model, optimizer, tiles, masks, HPARAMS["batch_size"])
        print(f"epoch {epoch}: segmentation loss {total:.3f}")


if __name__ == "__main__":
    main()
