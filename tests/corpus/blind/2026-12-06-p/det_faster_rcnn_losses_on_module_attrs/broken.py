"""Faster R-CNN (longcw/faster_rcnn_pytorch layout) trained end to end with a periodic validation pass.

Reduced from https://github.com/longcw/faster_rcnn_pytorch/issues/90: as in that repository,
the RPN and the Fast R-CNN head compute their losses inside ``forward`` when training and keep
them on the module (``self.cross_entropy``, ``self.loss_box``), exposed by a ``loss`` property;
``train.py`` reads ``net.loss + net.rpn.loss`` after each forward, then clips gradients and
steps SGD. The reporter's training loop also runs a small validation pass every few steps.
Synthetic images and targets, CPU.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class RPN(nn.Module):
    def __init__(self, in_channels=32, num_anchors=3):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 32, 3, padding=1)
        self.score_conv = nn.Conv2d(32, num_anchors * 2, 1)
        self.bbox_conv = nn.Conv2d(32, num_anchors * 4, 1)
        self.cross_entropy = None
        self.loss_box = None

    @property
    def loss(self):
        return self.cross_entropy + self.loss_box * 10

    def forward(self, features, rpn_labels=None, rpn_bbox_targets=None):
        x = F.relu(self.conv1(features))
        rpn_cls_score = self.score_conv(x)
        rpn_bbox_pred = self.bbox_conv(x)
        if self.training:
            self.cross_entropy, self.loss_box = self.build_loss(rpn_cls_score, rpn_bbox_pred, rpn_labels, rpn_bbox_targets)
        return rpn_cls_score, rpn_bbox_pred

    def build_loss(self, rpn_cls_score, rpn_bbox_pred, rpn_labels, rpn_bbox_targets):
        b, _, h, w = rpn_cls_score.shape
        score = rpn_cls_score.view(b, 2, -1, h, w)
        cross_entropy = F.cross_entropy(score, rpn_labels)
        loss_box = F.smooth_l1_loss(rpn_bbox_pred, rpn_bbox_targets)
        return cross_entropy, loss_box


class FasterRCNN(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.rpn = RPN()
        self.fc6 = nn.Linear(32 * 4 * 4, 64)
        self.score_fc = nn.Linear(64, n_classes)
        self.bbox_fc = nn.Linear(64, n_classes * 4)
        self.cross_entropy = None
        self.loss_box = None

    @property
    def loss(self):
        return self.cross_entropy + self.loss_box * 10

    def forward(self, im_data, gt=None):
        features = self.features(im_data)
        if gt is None:
            self.rpn(features)
        else:
            self.rpn(features, gt["rpn_labels"], gt["rpn_bbox_targets"])
        pooled = F.adaptive_max_pool2d(features, 4).flatten(1)
        x = F.relu(self.fc6(pooled))
        cls_score = self.score_fc(x)
        bbox_pred = self.bbox_fc(x)
        if self.training:
            self.cross_entropy = F.cross_entropy(cls_score, gt["labels"])
            self.loss_box = F.smooth_l1_loss(bbox_pred, gt["bbox_targets"])
        return cls_score, bbox_pred


def clip_gradient(model, clip_norm):
    total = torch.sqrt(sum(p.grad.pow(2).sum() for p in model.parameters() if p.grad is not None))
    norm = clip_norm / max(total.item(), clip_norm)
    for p in model.parameters():
        if p.grad is not None:
            p.grad.mul_(norm)


def next_blob(batch=2):
    im = torch.randn(batch, 3, 16, 16)
    gt = {
        "rpn_labels": torch.randint(0, 2, (batch, 3, 4, 4)),
        "rpn_bbox_targets": torch.randn(batch, 12, 4, 4),
        "labels": torch.randint(0, 4, (batch,)),
        "bbox_targets": torch.randn(batch, 16),
    }
    return im, gt


def validate(net, n=2):
    net.eval()
    correct = 0
    with torch.no_grad():
        for _ in range(n):
            im, gt = next_blob()
            cls_score, _ = net(im)
            correct += (cls_score.argmax(1) == gt["labels"]).sum().item()
    return correct


net = FasterRCNN()
net.train()
params = list(net.parameters())
optimizer = torch.optim.SGD(params[4:], lr=0.001, momentum=0.9, weight_decay=0.0005)
# the first conv blocks stay fixed, as with the pretrained VGG in train.py
for p in params[:4]:
    p.requires_grad = False

val_interval = 2
train_loss = 0.0
for step in range(1, 7):
    im_data, gt = next_blob()
    net(im_data, gt)
    loss = net.loss + net.rpn.loss
    train_loss += loss.item()

    optimizer.zero_grad()
    loss.backward()
    clip_gradient(net, 10.0)
    optimizer.step()

    if step % val_interval == 0:
        print(f"step {step}: loss {train_loss / step:.4f}, val correct {validate(net)}")
