"""Training a YOLOv5-style detector whose Detect head initialises its objectness and class biases.

Source: https://github.com/xhwNobody/yolov5_prune_sfp/issues/17
"RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation."
The reporter built the pruned YOLOv5 model of this repository (``Model(nc=80)``) to copy weights
into it and train it; ``Model.__init__`` calls ``_initialize_biases`` on the Detect head.
Reduced: a 3-conv backbone, two detection levels, 3 classes, random images and target maps, and a
simplified YOLO loss (objectness BCE, class BCE, box MSE on the target cells).
Corrected as upstream YOLOv5 writes it: the bias is adjusted through ``b.data``.
"""

import math

import torch
import torch.nn as nn


class Conv(nn.Module):
    def __init__(self, c1, c2, k=3, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Detect(nn.Module):
    def __init__(self, nc=80, anchors=(), ch=()):
        super().__init__()
        self.nc = nc  # number of classes
        self.no = nc + 5  # number of outputs per anchor
        self.nl = len(anchors)  # number of detection layers
        self.na = len(anchors[0]) // 2  # number of anchors
        self.register_buffer("anchors", torch.tensor(anchors).float().view(self.nl, -1, 2))
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)  # output conv
        self.stride = None

    def forward(self, x):
        for i in range(self.nl):
            x[i] = self.m[i](x[i])  # conv
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
        return x


class Model(nn.Module):
    def __init__(self, nc=80):
        super().__init__()
        self.b1 = Conv(3, 16, 3, 2)
        self.b2 = Conv(16, 32, 3, 2)
        self.b3 = Conv(32, 32, 3, 2)
        self.head_self = Detect(nc, anchors=((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119)), ch=(32, 32))
        self.head_self.stride = torch.tensor([4.0, 8.0])
        self._initialize_biases()  # only run once

    def forward(self, x):
        p4 = self.b2(self.b1(x))
        p8 = self.b3(p4)
        return self.head_self([p4, p8])

    def _initialize_biases(self, cf=None):  # initialize biases into Detect(), cf is class frequency
        m = self.head_self  # Detect() module
        for mi, s in zip(m.m, m.stride):  # from
            b = mi.bias.view(m.na, -1)  # conv.bias(255) to (3,85)
            b.data[:, 4] += math.log(8 / (640 / s) ** 2)  # obj (8 objects per 640 image)
            b.data[:, 5:] += math.log(0.6 / (m.nc - 0.99)) if cf is None else torch.log(cf / cf.sum())  # cls
            mi.bias = torch.nn.Parameter(b.view(-1), requires_grad=True)


def compute_loss(preds, targets):
    bce = nn.BCEWithLogitsLoss()
    lbox, lobj, lcls = torch.zeros(1), torch.zeros(1), torch.zeros(1)
    for p, (tobj, tcls, tbox) in zip(preds, targets):
        lobj += bce(p[..., 4], tobj)
        mask = tobj > 0
        if mask.any():
            lcls += bce(p[..., 5:][mask], tcls[mask])
            lbox += ((p[..., :4][mask].sigmoid() - tbox[mask]) ** 2).mean()
    return (lbox * 0.05 + lobj * 1.0 + lcls * 0.5) * preds[0].shape[0]


def make_targets(preds, nc):
    targets = []
    for p in preds:
        tobj = (torch.rand(p.shape[:4]) < 0.05).float()
        tcls = nn.functional.one_hot(torch.randint(0, nc, p.shape[:4]), nc).float()
        tbox = torch.rand(*p.shape[:4], 4)
        targets.append((tobj, tcls, tbox))
    return targets


def smart_optimizer(model, lr=0.01, momentum=0.937, decay=5e-4):
    g0, g1, g2 = [], [], []  # optimizer parameter groups
    for v in model.modules():
        if hasattr(v, "bias") and isinstance(v.bias, nn.Parameter):  # bias
            g2.append(v.bias)
        if isinstance(v, nn.BatchNorm2d):  # weight (no decay)
            g0.append(v.weight)
        elif hasattr(v, "weight") and isinstance(v.weight, nn.Parameter):  # weight (with decay)
            g1.append(v.weight)
    optimizer = torch.optim.SGD(g0, lr=lr, momentum=momentum, nesterov=True)
    optimizer.add_param_group({"params": g1, "weight_decay": decay})
    optimizer.add_param_group({"params": g2})
    return optimizer


def train(epochs=2, nc=3):
    torch.manual_seed(0)
    model = Model(nc=nc)
    optimizer = smart_optimizer(model)

    imgs = torch.randn(8, 3, 32, 32)
    for epoch in range(epochs):
        for i in range(0, 8, 4):
            pred = model(imgs[i : i + 4])
            loss = compute_loss(pred, make_targets(pred, nc))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(epoch, i, loss.item())


if __name__ == "__main__":
    train()
