"""Reduced from https://github.com/Jee-King/TSAN/issues/3

The author was training TSAN, a single-image super-resolution network (EDSR-style trainer, L1 loss on
HR patches), and got "one of the variables needed for gradient computation has been modified by an
inplace operation". The fix posted in the issue: in the cross-space block (CSB) of model/tsan.py,
`out = x` must be `out = x.clone()`. CSB cuts its input into four spatial quadrants, mixes them with
a 1x1 conv, and writes the mixed quadrants back with slice assignments into `out`, which is the
block's input itself: the tensor the ReLU(inplace=True) before it returned (and saved) and the dense
branch's first conv saved.

Here the same network in miniature: sub-mean, a first conv with an in-place ReLU, two MCAB blocks
(dense residual branch times a sigmoid attention branch that starts with CSB), a tail and a
pixel-shuffle upsampler, trained on random LR/HR pairs.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class MeanShift(nn.Conv2d):
    def __init__(self, rgb_mean, sign=-1):
        super().__init__(3, 3, kernel_size=1)
        self.weight.data = torch.eye(3).view(3, 3, 1, 1)
        self.bias.data = sign * torch.tensor(rgb_mean)
        for p in self.parameters():
            p.requires_grad = False


class DRB(nn.Module):
    """Dense residual branch."""

    def __init__(self, n_feats):
        super().__init__()
        self.conv1 = nn.Conv2d(n_feats, n_feats, 3, padding=1)
        self.conv2 = nn.Conv2d(2 * n_feats, n_feats, 3, padding=1)
        self.fuse = nn.Conv2d(3 * n_feats, n_feats, 1, bias=False)

    def forward(self, x):
        d1 = F.relu(self.conv1(x))
        d2 = F.relu(self.conv2(torch.cat([x, d1], 1)))
        return x + self.fuse(torch.cat([x, d1, d2], 1))


class CSB(nn.Module):
    """Cross-space block: the four quadrants stacked on channels, mixed, and put back."""

    def __init__(self, n_feats):
        super().__init__()
        self.conv1 = nn.Conv2d(n_feats * 4, n_feats * 4, kernel_size=1, bias=False)

    def forward(self, x):
        h, w = x.size(2) // 2, x.size(3) // 2
        f1 = x[:, :, :h, :w]
        f2 = x[:, :, h:, :w]
        f3 = x[:, :, :h, w:]
        f4 = x[:, :, h:, w:]
        f_all = self.conv1(torch.cat([f1, f2, f3, f4], 1))
        c = f_all.size(1) // 4
        out = x.clone()
        out[:, :, :h, :w] = f_all[:, :c]
        out[:, :, h:, :w] = f_all[:, c:2 * c]
        out[:, :, :h, w:] = f_all[:, 2 * c:3 * c]
        out[:, :, h:, w:] = f_all[:, 3 * c:]
        return out


class MCAB(nn.Module):
    def __init__(self, n_feats):
        super().__init__()
        self.drb = DRB(n_feats)
        self.csb = CSB(n_feats)
        self.conv3 = nn.Conv2d(n_feats, n_feats, 3, padding=1, bias=False)

    def forward(self, x):
        down_b = self.drb(x)
        top_b = self.csb(x)
        top_b = torch.sigmoid(self.conv3(top_b))
        return down_b * top_b


class TSAN(nn.Module):
    def __init__(self, n_feats=16, scale=2):
        super().__init__()
        rgb_mean = (0.4488, 0.4371, 0.4040)
        self.sub_mean = MeanShift(rgb_mean, -1)
        self.add_mean = MeanShift(rgb_mean, 1)
        self.first_conv = nn.Conv2d(3, n_feats, 1)
        self.relu = nn.ReLU(inplace=True)
        self.body1 = MCAB(n_feats)
        self.body2 = MCAB(n_feats)
        self.tail = nn.Conv2d(2 * n_feats, n_feats, 1)
        self.up = nn.Sequential(nn.Conv2d(n_feats, n_feats * scale * scale, 3, padding=1), nn.PixelShuffle(scale))
        self.output = nn.Conv2d(n_feats, 3, 3, padding=1)

    def forward(self, x):
        x = self.sub_mean(x)
        first_out = self.relu(self.first_conv(x))
        out1 = self.body1(first_out)
        out2 = self.body2(out1)
        out = self.tail(torch.cat([out1, out2], 1)) + first_out
        out = self.output(self.up(out))
        return self.add_mean(out)


def make_pairs(n=32, size=8, scale=2):
    hr = torch.rand(n, 3, size * scale, size * scale)
    lr = F.avg_pool2d(hr, scale)
    return lr, hr


class Trainer:
    def __init__(self, model, lr_imgs, hr_imgs, batch_size=8):
        self.model = model
        self.lr_imgs, self.hr_imgs = lr_imgs, hr_imgs
        self.batch_size = batch_size
        self.loss = nn.L1Loss()
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)

    def train_epoch(self, epoch):
        self.model.train()
        perm = torch.randperm(len(self.lr_imgs))
        for i in range(0, len(perm), self.batch_size):
            idx = perm[i:i + self.batch_size]
            lr, hr = self.lr_imgs[idx], self.hr_imgs[idx]
            self.optimizer.zero_grad()
            sr = self.model(lr)
            loss = self.loss(sr, hr)
            loss.backward()
            self.optimizer.step()
        print(f"epoch {epoch}: L1 {loss.item():.4f}")


model = TSAN()
lr_imgs, hr_imgs = make_pairs()
trainer = Trainer(model, lr_imgs, hr_imgs)
for epoch in range(3):
    trainer.train_epoch(epoch)
