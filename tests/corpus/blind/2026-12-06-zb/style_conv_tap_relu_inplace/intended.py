"""Intended version of broken.py: the copied net's ReLUs are made out of place (the fix for conv-layer style taps).

Source: https://github.com/ProGamerGov/neural-style-pt/issues/44
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

STYLE_LAYERS = ["conv1_1", "conv2_1"]   # taps on conv outputs, as in the report
CONTENT_LAYERS = ["relu2_2"]
STYLE_WEIGHT, CONTENT_WEIGHT, TV_WEIGHT = 100.0, 1.0, 1e-3


def make_features():
    """A frozen VGG-like feature stack; its ReLUs are out of place so the style taps on conv outputs keep their values."""
    cfg = [("conv1_1", 3, 16), ("relu1_1",), ("conv1_2", 16, 16), ("relu1_2",), ("pool1",),
           ("conv2_1", 16, 32), ("relu2_1",), ("conv2_2", 32, 32), ("relu2_2",)]
    layers = []
    for item in cfg:
        name = item[0]
        if name.startswith("conv"):
            layers.append((name, nn.Conv2d(item[1], item[2], 3, padding=1)))
        elif name.startswith("relu"):
            layers.append((name, nn.ReLU(inplace=False)))
        else:
            layers.append((name, nn.AvgPool2d(2)))
    return layers


class GramMatrix(nn.Module):
    def forward(self, x):
        b, c, h, w = x.size()
        flat = x.view(c, h * w)
        return torch.mm(flat, flat.t())


class StyleLoss(nn.Module):
    def __init__(self, strength):
        super().__init__()
        self.strength = strength
        self.gram = GramMatrix()
        self.mode = "none"
        self.target = None
        self.loss = None

    def forward(self, x):
        g = self.gram(x) / x.nelement()
        if self.mode == "capture":
            self.target = g.detach()
        elif self.mode == "loss":
            self.loss = self.strength * F.mse_loss(g, self.target)
        return x


class ContentLoss(nn.Module):
    def __init__(self, strength):
        super().__init__()
        self.strength = strength
        self.mode = "none"
        self.target = None
        self.loss = None

    def forward(self, x):
        if self.mode == "capture":
            self.target = x.detach()
        elif self.mode == "loss":
            self.loss = self.strength * F.mse_loss(x, self.target)
        return x


class TVLoss(nn.Module):
    def __init__(self, strength):
        super().__init__()
        self.strength = strength
        self.loss = None

    def forward(self, x):
        dx = x[:, :, 1:, :] - x[:, :, :-1, :]
        dy = x[:, :, :, 1:] - x[:, :, :, :-1]
        self.loss = self.strength * (dx.abs().mean() + dy.abs().mean())
        return x


def build_net():
    net = nn.Sequential()
    tv = TVLoss(TV_WEIGHT)
    net.add_module("tv", tv)
    style_losses, content_losses = [], []
    for name, layer in make_features():
        net.add_module(name, layer)
        if name in STYLE_LAYERS:
            mod = StyleLoss(STYLE_WEIGHT)
            net.add_module("style_" + name, mod)
            style_losses.append(mod)
        if name in CONTENT_LAYERS:
            mod = ContentLoss(CONTENT_WEIGHT)
            net.add_module("content_" + name, mod)
            content_losses.append(mod)
    for p in net.parameters():
        p.requires_grad_(False)
    return net, style_losses, content_losses, tv


content_image = torch.rand(1, 3, 32, 32)
style_image = torch.rand(1, 3, 32, 32)

net, style_losses, content_losses, tv_loss = build_net()

# capture targets
for m in content_losses:
    m.mode = "capture"
net(content_image)
for m in content_losses:
    m.mode = "none"
for m in style_losses:
    m.mode = "capture"
net(style_image)
for m in style_losses + content_losses:
    m.mode = "loss"

img = nn.Parameter(content_image.clone())
optimizer = torch.optim.Adam([img], lr=0.02)

for it in range(1, 11):
    optimizer.zero_grad()
    net(img)
    loss = tv_loss.loss
    for m in content_losses:
        loss = loss + m.loss
    for m in style_losses:
        loss = loss + m.loss
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        img.clamp_(0, 1)
    if it % 5 == 0:
        print(f"iter {it}: total loss {loss.item():.4f}")
