"""Anchor-based grasp-rectangle detector: corner offsets scaled by the anchor in place.

Report: https://github.com/we0091234/Chinese_license_plate_detection_recognition/issues/26
(training fails at the first backward with "one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.FloatTensor [204, 2]], which is
output 0 of AsStridedBackward0, is at version 4", in BinaryCrossEntropyWithLogitsBackward0 for
``BCEcls(ps[:, 13:], t)``). The author's YOLO loss takes ``ps = pi[b, a, gj, gi]``, computes the
class BCE on the slice ``ps[:, 13:]`` (which saves that view of ``ps``), and then decodes the four
corner landmarks with ``plandmarks = ps[:, 5:13]`` followed by four slice assignments
``plandmarks[:, 0:2] = plandmarks[:, 0:2] * anchors[i]`` ..., which write into ``ps`` itself and
bump its version four times. The training setting (grasp rectangles given by their four corners,
grasp angle as classification bins) is the writer's; the loss layout is the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_ANGLE_BINS = 6
N_OUT = 5 + 8 + N_ANGLE_BINS  # xywh, objectness, 4 corners, angle bins
ANCHORS = torch.tensor([[1.5, 0.8], [2.5, 1.2]])  # grid units


class GraspNet(nn.Module):
    def __init__(self, na=2):
        super().__init__()
        self.na = na
        self.backbone = nn.Sequential(
            nn.Conv2d(4, 16, 3, padding=1), nn.BatchNorm2d(16), nn.SiLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.SiLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.SiLU())
        self.head = nn.Conv2d(32, na * N_OUT, 1)

    def forward(self, rgbd):
        p = self.head(self.backbone(rgbd))
        b, _, h, w = p.shape
        return p.view(b, self.na, N_OUT, h, w).permute(0, 1, 3, 4, 2).contiguous()


class WingLoss(nn.Module):
    def __init__(self, w=10.0, e=2.0):
        super().__init__()
        self.w, self.e = w, e
        self.c = w - w * torch.log(torch.tensor(1 + w / e))

    def forward(self, x, t):
        d = (x - t).abs()
        flag = (d.detach() < self.w).float()
        return (flag * self.w * torch.log(1 + d / self.e) + (1 - flag) * (d - self.c)).sum()


def build_targets(n_img, grid, n_per_img=3):
    b = torch.arange(n_img).repeat_interleave(n_per_img)
    a = torch.randint(0, 2, (b.numel(),))
    gj, gi = torch.randint(0, grid, (2, b.numel()))
    tbox = torch.cat([torch.rand(b.numel(), 2), ANCHORS[a] * (0.7 + 0.6 * torch.rand(b.numel(), 1))], 1)
    tcls = torch.randint(0, N_ANGLE_BINS, (b.numel(),))
    tcorners = (torch.rand(b.numel(), 8) - 0.5) * 4
    return (b, a, gj, gi), tbox, tcls, tcorners


def grasp_loss(pi, indices, tbox, tcls, tcorners):
    b, a, gj, gi = indices
    anchors = ANCHORS[a]
    ps = pi[b, a, gj, gi]  # prediction subset for the matched anchors

    pxy = ps[:, :2].sigmoid() * 2 - 0.5
    pwh = (ps[:, 2:4].sigmoid() * 2) ** 2 * anchors
    lbox = F.mse_loss(torch.cat([pxy, pwh], 1), tbox)

    tobj = torch.zeros_like(pi[..., 4])
    tobj[b, a, gj, gi] = 1.0
    lobj = F.binary_cross_entropy_with_logits(pi[..., 4], tobj)

    t = torch.zeros_like(ps[:, 13:])
    t[range(len(b)), tcls] = 1.0
    lcls = bce_cls(ps[:, 13:], t)

    # corner landmarks are predicted in anchor units
    plandmarks = ps[:, 5:13]
    plandmarks[:, 0:2] = plandmarks[:, 0:2] * anchors
    plandmarks[:, 2:4] = plandmarks[:, 2:4] * anchors
    plandmarks[:, 4:6] = plandmarks[:, 4:6] * anchors
    plandmarks[:, 6:8] = plandmarks[:, 6:8] * anchors
    lmark = wing(plandmarks, tcorners) / len(b)

    return lbox + lobj + 0.5 * lcls + 0.05 * lmark


model = GraspNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
bce_cls = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.0]))
wing = WingLoss()

rgbd = torch.rand(16, 4, 32, 32)
grid = 8
targets = [build_targets(4, grid) for _ in range(4)]

for epoch in range(2):
    for k in range(4):
        images = rgbd[4 * k:4 * k + 4]
        indices, tbox, tcls, tcorners = targets[k]
        pred = model(images)
        loss = grasp_loss(pred, indices, tbox, tcls, tcorners)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
