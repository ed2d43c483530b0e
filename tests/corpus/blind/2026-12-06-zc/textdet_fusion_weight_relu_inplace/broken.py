"""Scene text detection: DBNet-style differentiable binarisation with a learned weighted fusion of the FPN scales.

Source: https://github.com/zylo117/Yet-Another-EfficientDet-Pytorch/issues/503 -- reproducing
EfficientDet's BiFPN "fast normalised fusion" (non-negative learned weights, ``weight = relu(w);
weight = weight / (weight.sum() + eps)``), the author's fusion module raised "a leaf Variable that
requires grad is being used in an in-place operation": the learned weight ``nn.Parameter`` went
through a ReLU module that works in place. The maintainer's answer applies the ReLU to
``self.weight.clone()``. Here a DBNet neck fuses its four upsampled scales with such weights and
reuses the neck's in-place ReLU module on them. The training setting (probability map, threshold map,
approximate binary map, shrunk and dilated text regions) is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

C = 16


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        chans = [3, 8, 16, 24, 32]
        self.stages = nn.ModuleList(
            nn.Sequential(nn.Conv2d(chans[i], chans[i + 1], 3, stride=2, padding=1), nn.BatchNorm2d(chans[i + 1]),
                          nn.ReLU()) for i in range(4))

    def forward(self, x):
        feats = []
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        return feats  # strides 2, 4, 8, 16


class FusionNeck(nn.Module):
    def __init__(self, eps=1e-4):
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, C, 1) for c in (8, 16, 24, 32))
        self.fuse_w = nn.Parameter(torch.ones(4))
        self.relu = nn.ReLU(inplace=True)
        self.smooth = nn.Sequential(nn.Conv2d(C, C, 3, padding=1), nn.BatchNorm2d(C))
        self.eps = eps

    def forward(self, feats):
        size = feats[0].shape[-2:]
        maps = [F.interpolate(l(f), size=size, mode="nearest") for l, f in zip(self.lateral, feats)]
        w = self.relu(self.fuse_w)
        w = w / (w.sum() + self.eps)
        fused = sum(wi * m for wi, m in zip(w, maps))
        return self.relu(self.smooth(fused))


def head():
    return nn.Sequential(nn.Conv2d(C, C // 2, 3, padding=1), nn.BatchNorm2d(C // 2), nn.ReLU(),
                         nn.ConvTranspose2d(C // 2, 1, 2, stride=2), nn.Sigmoid())


class DBNet(nn.Module):
    def __init__(self, k=50.0):
        super().__init__()
        self.backbone, self.neck = Backbone(), FusionNeck()
        self.prob_head, self.thresh_head = head(), head()
        self.k = k

    def forward(self, img):
        f = self.neck(self.backbone(img))
        prob, thresh = self.prob_head(f), self.thresh_head(f)
        binary = torch.sigmoid(self.k * (prob - thresh))  # differentiable binarisation
        return prob, thresh, binary


def make_targets(bs, size=32):
    shrink = torch.zeros(bs, 1, size, size)
    dilate = torch.zeros(bs, 1, size, size)
    for b in range(bs):
        y, x = torch.randint(4, size - 12, (2,)).tolist()
        shrink[b, :, y + 2:y + 6, x + 2:x + 8] = 1
        dilate[b, :, y:y + 8, x:x + 10] = 1
    thresh_map = 0.3 + 0.4 * (dilate - shrink)
    return shrink, dilate, thresh_map


def dice_loss(pred, gt, eps=1e-6):
    return 1 - (2 * (pred * gt).sum() + eps) / (pred.sum() + gt.sum() + eps)


model = DBNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

for step in range(4):
    imgs = torch.randn(2, 3, 32, 32)
    shrink, dilate, thresh_gt = make_targets(2)
    prob, thresh, binary = model(imgs)
    l_prob = F.binary_cross_entropy(prob, shrink)
    l_thresh = (torch.abs(thresh - thresh_gt) * dilate).sum() / (dilate.sum() + 1e-6)
    l_bin = dice_loss(binary, shrink)
    loss = l_prob + 10.0 * l_thresh + l_bin
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
