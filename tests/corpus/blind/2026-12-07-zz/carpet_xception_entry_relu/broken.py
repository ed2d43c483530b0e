"""Carpet and upholstery defect inspection with a small Xception.

Source: https://github.com/osmr/imgclsmob/issues/13 ("Inplace ReLU's are unnecessary
and wrong"). The reporter trained imgclsmob's Xception and got "one of the variables
needed for gradient computation has been modified by an inplace operation": the
Xception unit computes its identity branch (1x1 convolution) from ``x`` and then
runs the body, whose first layer is a shared ``nn.ReLU(inplace=True)`` applied to
the same ``x``; removing ``inplace=True`` fixed it. Here a reduced Xception (entry
stem, three units with the imgclsmob layout, global pooling) classifies 32x32 patches
of woven carpet and upholstery fabric from a line-scan camera into good / cut pile /
stain / loose thread / hole.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

CLASSES = ["good", "cut_pile", "stain", "loose_thread", "hole"]
HPARAMS = {"batch_size": 16, "lr": 0.05, "momentum": 0.9, "steps": 4}


class DwsConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.dw_conv = nn.Conv2d(in_channels, in_channels, 3, padding=1, groups=in_channels, bias=False)
        self.pw_conv = nn.Conv2d(in_channels, out_channels, 1, bias=False)

    def forward(self, x):
        return self.pw_conv(self.dw_conv(x))


class DwsConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, activate):
        super().__init__()
        self.activate = activate
        if self.activate:
            self.activ = nn.ReLU(inplace=True)
        self.conv = DwsConv(in_channels, out_channels)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        if self.activate:
            x = self.activ(x)
        return self.bn(self.conv(x))


class XceptionUnit(nn.Module):
    def __init__(self, in_channels, out_channels, stride, reps, start_with_relu=True, grow_first=True):
        super().__init__()
        self.resize_identity = (in_channels != out_channels) or (stride != 1)
        if self.resize_identity:
            self.identity_conv = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )
        self.body = nn.Sequential()
        for i in range(reps):
            if (grow_first and i == 0) or ((not grow_first) and i == reps - 1):
                in_ch, out_ch = in_channels, out_channels
            elif grow_first:
                in_ch, out_ch = out_channels, out_channels
            else:
                in_ch, out_ch = in_channels, in_channels
            activate = start_with_relu if i == 0 else True
            self.body.add_module(f"block{i + 1}", DwsConvBlock(in_ch, out_ch, activate))
        if stride != 1:
            self.body.add_module("pool", nn.MaxPool2d(3, stride=stride, padding=1))

    def forward(self, x):
        if self.resize_identity:
            identity = self.identity_conv(x)
        else:
            identity = x
        x = self.body(x)
        return x + identity


class TinyXception(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=1, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
        )
        self.units = nn.Sequential(
            XceptionUnit(16, 32, stride=2, reps=2, start_with_relu=False),
            XceptionUnit(32, 64, stride=2, reps=2),
            XceptionUnit(64, 64, stride=1, reps=2),
        )
        self.classifier = nn.Linear(64, num_classes)

    def forward(self, x):
        x = self.units(self.stem(x))
        x = F.adaptive_avg_pool2d(F.relu(x), 1).flatten(1)
        return self.classifier(x)


def fabric_patches(n):
    base = torch.rand(n, 3, 1, 1) * 0.5 + 0.25
    weave = torch.sin(torch.arange(32).float() * 1.3).view(1, 1, 1, 32) * 0.1
    images = base + weave + 0.05 * torch.randn(n, 3, 32, 32)
    labels = torch.randint(0, len(CLASSES), (n,))
    for i, lab in enumerate(labels.tolist()):
        if lab > 0:
            r, c = torch.randint(4, 24, (2,)).tolist()
            images[i, :, r:r + 6, c:c + 6] += (lab - 2.5) * 0.2
    return images, labels


def train(model, images, labels, hp):
    opt = torch.optim.SGD(model.parameters(), lr=hp["lr"], momentum=hp["momentum"])
    model.train()
    for step in range(hp["steps"]):
        idx = torch.randint(0, images.size(0), (hp["batch_size"],))
        logits = model(images[idx])
        ce = F.cross_entropy(logits, labels[idx])
        opt.zero_grad()
        ce.backward()
        opt.step()
        print(f"step {step}: ce {ce.item():.4f}")


if __name__ == "__main__":
    images, labels = fabric_patches(128)
    net = TinyXception(len(CLASSES))
    train(net, images, labels, HPARAMS)
