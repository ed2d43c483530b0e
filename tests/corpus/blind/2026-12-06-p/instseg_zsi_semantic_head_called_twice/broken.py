"""Zero-shot instance segmentation: a semantic bbox head that scores RoIs against class word vectors.

Reduced from https://github.com/zhengye1995/Zero-shot-Instance-Segmentation/issues/30: the
background word vector is learned by the RPN (``with_syn_bg``/``sync_bg``) and handed to the
bbox head, which keeps the class word vectors in a buffer. The author calls the bbox head a
second time on summed RoI features (``sum_feats``) and adds that head's losses to the first.
Synthetic RoI features, labels and word vectors, CPU, one SGD optimizer over the detector.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

SEMANTIC_DIMS = 30  # 300 in the paper (word2vec)
NUM_CLASSES = 9  # background + 8 seen classes (49 in the paper)
VOCAB = 20


class BackgroundAwareRPNHead(nn.Module):
    """RPN conv plus a learned background word vector (``bg_vector``)."""

    def __init__(self, in_channels):
        super().__init__()
        self.rpn_conv = nn.Conv2d(in_channels, in_channels, 3, padding=1)
        self.rpn_cls = nn.Conv2d(in_channels, 3, 1)
        self.bg_fc = nn.Linear(in_channels, SEMANTIC_DIMS)

    def forward(self, feats):
        x = F.relu(self.rpn_conv(feats))
        bg_vector = self.bg_fc(x.mean(dim=(2, 3)))
        return self.rpn_cls(x), bg_vector


class SemanticBBoxHead(nn.Module):
    def __init__(self, in_channels, roi_size=4, sync_bg=True):
        super().__init__()
        self.sync_bg = sync_bg
        self.register_buffer("vec", torch.randn(SEMANTIC_DIMS, NUM_CLASSES))  # column 0: background
        self.register_buffer("voc", torch.randn(SEMANTIC_DIMS, VOCAB))
        self.shared_fc = nn.Linear(in_channels * roi_size * roi_size, 64)
        self.fc_semantic = nn.Linear(64, SEMANTIC_DIMS)
        self.kernel_semantic = nn.Linear(VOCAB, SEMANTIC_DIMS)
        self.fc_reg = nn.Linear(64, 4 * NUM_CLASSES)

    def forward(self, x, bg_vector=None):
        x = F.relu(self.shared_fc(x.flatten(1)))
        semantic_feature = self.fc_semantic(x)
        if self.sync_bg:
            with torch.no_grad():
                self.vec[:, 0] = bg_vector
        semantic_score = torch.mm(semantic_feature, self.voc)
        semantic_score = self.kernel_semantic(semantic_score)
        semantic_score = torch.mm(semantic_score, self.vec)
        bbox_pred = self.fc_reg(x)
        return semantic_score, bbox_pred

    def loss(self, cls_score, bbox_pred, labels, bbox_targets):
        return F.cross_entropy(cls_score, labels), F.smooth_l1_loss(bbox_pred, bbox_targets)


class ZeroShotTwoStage(nn.Module):
    def __init__(self, in_channels=16):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, in_channels, 3, stride=2, padding=1), nn.ReLU())
        self.rpn_head = BackgroundAwareRPNHead(in_channels)
        self.bbox_head = SemanticBBoxHead(in_channels)

    def forward_train(self, img, rois, labels, bbox_targets, rpn_labels):
        x = self.backbone(img)
        rpn_cls, bg_vector = self.rpn_head(x)
        losses = {"loss_rpn_cls": F.binary_cross_entropy_with_logits(rpn_cls, rpn_labels)}

        bbox_feats = roi_pool(x, rois)
        context = F.adaptive_avg_pool2d(x, 4)[rois[:, 0].long()]
        sum_feats = bbox_feats + context

        cls_score, bbox_pred = self.bbox_head(bbox_feats, bg_vector=bg_vector[0].view(SEMANTIC_DIMS))
        sum_cls_score, sum_bbox_pred = self.bbox_head(sum_feats, bg_vector=bg_vector[0].view(SEMANTIC_DIMS))

        losses["loss_cls"], losses["loss_bbox"] = self.bbox_head.loss(cls_score, bbox_pred, labels, bbox_targets)
        losses["loss_sum_cls"], losses["loss_sum_bbox"] = self.bbox_head.loss(
            sum_cls_score, sum_bbox_pred, labels, bbox_targets
        )
        return losses


def roi_pool(feats, rois, size=4):
    out = []
    for b, x1, y1, x2, y2 in rois.tolist():
        out.append(F.adaptive_avg_pool2d(feats[int(b), :, int(y1) : int(y2), int(x1) : int(x2)], size))
    return torch.stack(out)


def sample_batch():
    img = torch.randn(2, 3, 16, 16)
    rois = torch.tensor([[0, 0, 0, 4, 4], [0, 1, 2, 7, 8], [1, 2, 1, 8, 6], [1, 0, 3, 5, 8]], dtype=torch.float)
    labels = torch.randint(0, NUM_CLASSES, (4,))
    bbox_targets = torch.randn(4, 4 * NUM_CLASSES)
    rpn_labels = (torch.rand(2, 3, 8, 8) > 0.5).float()
    return img, rois, labels, bbox_targets, rpn_labels


def train(model, optimizer, iters=4):
    model.train()
    for i in range(iters):
        losses = model.forward_train(*sample_batch())
        loss = sum(losses.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(i, {k: round(v.item(), 4) for k, v in losses.items()})


if __name__ == "__main__":
    model = ZeroShotTwoStage()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    train(model, optimizer)
