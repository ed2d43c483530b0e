"""Reduced from https://github.com/fepegar/unet/issues/36

The author built fepegar's `unet` package (a U-Net for medical image segmentation, often used
with TorchIO) with residual=True and called loss.backward() on torch 2.0: "one of the variables
needed for gradient computation has been modified by an inplace operation". In the residual
encoding and decoding blocks, x = self.conv2(x) ends with the block's ReLU, and the residual
connection is then added with x += connection, in place on the ReLU's output, which ReLU saved
for its backward. The fix, merged as PR #37: x = x + connection.

Here: a small residual 2-D U-Net segmenting a synthetic lesion out of noisy MRI-like slices,
trained with BCE plus soft Dice, epoch by epoch.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)


class ConvolutionalBlock(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, padding=1),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x):
        return self.block(x)


class EncodingBlock(nn.Module):
    def __init__(self, in_channels, out_channels, residual=True, downsample=True):
        super().__init__()
        self.residual = residual
        self.conv1 = ConvolutionalBlock(in_channels, out_channels)
        self.conv2 = ConvolutionalBlock(out_channels, out_channels)
        if residual:
            self.conv_residual = nn.Conv2d(in_channels, out_channels, 1)
        self.downsample = nn.MaxPool2d(2) if downsample else None

    def forward(self, x):
        if self.residual:
            connection = self.conv_residual(x)
            x = self.conv1(x)
            x = self.conv2(x)
            x = x + connection
        else:
            x = self.conv1(x)
            x = self.conv2(x)
        if self.downsample is None:
            return x
        skip_connection = x
        x = self.downsample(x)
        return x, skip_connection


class DecodingBlock(nn.Module):
    def __init__(self, in_channels, residual=True):
        super().__init__()
        self.residual = residual
        self.upsample = nn.ConvTranspose2d(in_channels, in_channels // 2, 2, stride=2)
        self.conv1 = ConvolutionalBlock(in_channels, in_channels // 2)
        self.conv2 = ConvolutionalBlock(in_channels // 2, in_channels // 2)
        if residual:
            self.conv_residual = nn.Conv2d(in_channels, in_channels // 2, 1)

    def forward(self, skip_connection, x):
        x = self.upsample(x)
        x = torch.cat((skip_connection, x), dim=1)
        if self.residual:
            connection = self.conv_residual(x)
            x = self.conv1(x)
            x = self.conv2(x)
            x = x + connection
        else:
            x = self.conv1(x)
            x = self.conv2(x)
        return x


class UNet2D(nn.Module):
    def __init__(self, in_channels=1, out_classes=1, base=8, residual=True):
        super().__init__()
        self.enc1 = EncodingBlock(in_channels, base, residual)
        self.enc2 = EncodingBlock(base, 2 * base, residual)
        self.bottom = EncodingBlock(2 * base, 4 * base, residual, downsample=False)
        self.dec2 = DecodingBlock(4 * base, residual)
        self.dec1 = DecodingBlock(2 * base, residual)
        self.classifier = nn.Conv2d(base, out_classes, 1)

    def forward(self, x):
        x, skip1 = self.enc1(x)
        x, skip2 = self.enc2(x)
        x = self.bottom(x)
        x = self.dec2(skip2, x)
        x = self.dec1(skip1, x)
        return self.classifier(x)


def soft_dice_loss(logits, target, eps=1.0):
    probs = torch.sigmoid(logits)
    inter = (probs * target).sum(dim=(1, 2, 3))
    union = probs.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3))
    return 1 - ((2 * inter + eps) / (union + eps)).mean()


def make_slices(n=24, size=32):
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    centers = torch.randint(8, size - 8, (n, 2))
    radii = torch.randint(3, 7, (n,))
    masks = ((yy - centers[:, 0, None, None]) ** 2 + (xx - centers[:, 1, None, None]) ** 2
             <= radii[:, None, None] ** 2).float().unsqueeze(1)
    images = 0.6 * masks + 0.3 * torch.randn(n, 1, size, size)
    return images, masks


class Trainer:
    def __init__(self, model, lr=1e-3):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.bce = nn.BCEWithLogitsLoss()

    def train_epoch(self, images, masks, batch_size=8):
        self.model.train()
        total = 0.0
        for i in range(0, images.shape[0], batch_size):
            image, mask = images[i:i + batch_size], masks[i:i + batch_size]
            logits = self.model(image)
            loss = self.bce(logits, mask) + soft_dice_loss(logits, mask)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            total += loss.item()
        return total


images, masks = make_slices()
unet = UNet2D(residual=True)
trainer = Trainer(unet)
for epoch in range(3):
    print(epoch, trainer.train_epoch(images, masks))
