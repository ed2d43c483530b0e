"""Two-stage detector training step: RPN head with two stacked convs, then an RoI classification head.

Reduced from https://github.com/open-mmlab/mmdetection/issues/7933: the author trains a
Cascade Mask R-CNN and sets ``num_convs=2`` on the RPN head (so ``rpn_conv`` becomes a stack of
conv+ReLU ``ConvModule`` blocks), keeping the head's forward as it is for one conv.
Synthetic feature maps and targets, CPU, one SGD optimizer over the whole detector.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ConvModule(nn.Module):
    """conv + activation, mmcv style."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.activate = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.activate(self.conv(x))


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.layer = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU())

    def forward(self, img):
        return self.layer(self.stem(img))


class RPNHead(nn.Module):
    def __init__(self, in_channels, feat_channels, num_anchors, num_convs=1):
        super().__init__()
        self.num_convs = num_convs
        if num_convs > 1:
            convs = [ConvModule(in_channels if i == 0 else feat_channels, feat_channels) for i in range(num_convs)]
            self.rpn_conv = nn.Sequential(*convs)
        else:
            self.rpn_conv = nn.Conv2d(in_channels, feat_channels, 3, padding=1)
        self.rpn_cls = nn.Conv2d(feat_channels, num_anchors, 1)
        self.rpn_reg = nn.Conv2d(feat_channels, num_anchors * 4, 1)

    def forward(self, x):
        x = self.rpn_conv(x)
        x = F.relu(x, inplace=False)
        return self.rpn_cls(x), self.rpn_reg(x)

    def loss(self, cls_score, bbox_pred, labels, bbox_targets):
        loss_cls = F.binary_cross_entropy_with_logits(cls_score, labels)
        pos = labels.repeat_interleave(4, dim=1)
        loss_bbox = F.smooth_l1_loss(bbox_pred * pos, bbox_targets * pos)
        return {"loss_rpn_cls": loss_cls, "loss_rpn_bbox": loss_bbox}


class RoIHead(nn.Module):
    def __init__(self, in_channels, num_classes, roi_size=4):
        super().__init__()
        self.roi_size = roi_size
        self.shared_fc = nn.Linear(in_channels * roi_size * roi_size, 64)
        self.fc_cls = nn.Linear(64, num_classes + 1)
        self.fc_reg = nn.Linear(64, 4 * num_classes)

    def forward(self, feats, rois):
        # crude RoI pooling: crop each box on the feature grid and resize
        pooled = []
        for b, x1, y1, x2, y2 in rois.tolist():
            crop = feats[int(b), :, int(y1) : int(y2), int(x1) : int(x2)]
            pooled.append(F.adaptive_avg_pool2d(crop, self.roi_size))
        x = torch.stack(pooled).flatten(1)
        x = F.relu(self.shared_fc(x))
        return self.fc_cls(x), self.fc_reg(x)


class TwoStageDetector(nn.Module):
    def __init__(self, num_classes=5, num_anchors=3):
        super().__init__()
        self.backbone = Backbone()
        self.rpn_head = RPNHead(32, 32, num_anchors, num_convs=2)
        self.roi_head = RoIHead(32, num_classes)

    def forward_train(self, img, rpn_labels, rpn_targets, rois, roi_labels, roi_targets):
        feats = self.backbone(img)
        cls_score, bbox_pred = self.rpn_head(feats)
        losses = self.rpn_head.loss(cls_score, bbox_pred, rpn_labels, rpn_targets)
        roi_cls, roi_reg = self.roi_head(feats, rois)
        losses["loss_cls"] = F.cross_entropy(roi_cls, roi_labels)
        losses["loss_bbox"] = F.smooth_l1_loss(roi_reg, roi_targets)
        return losses


def make_batch(batch_size=2, num_anchors=3, num_classes=5):
    img = torch.randn(batch_size, 3, 32, 32)
    rpn_labels = (torch.rand(batch_size, num_anchors, 8, 8) > 0.7).float()
    rpn_targets = torch.randn(batch_size, num_anchors * 4, 8, 8)
    rois = torch.tensor([[0, 0, 0, 4, 4], [0, 2, 2, 8, 8], [1, 1, 0, 6, 5], [1, 3, 3, 8, 8]], dtype=torch.float)
    roi_labels = torch.randint(0, num_classes + 1, (4,))
    roi_targets = torch.randn(4, 4 * num_classes)
    return img, rpn_labels, rpn_targets, rois, roi_labels, roi_targets


def parse_losses(losses):
    return sum(v for v in losses.values())


def main():
    detector = TwoStageDetector()
    optimizer = torch.optim.SGD(detector.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)
    detector.train()
    for it in range(5):
        batch = make_batch()
        losses = detector.forward_train(*batch)
        loss = parse_losses(losses)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"iter {it}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
