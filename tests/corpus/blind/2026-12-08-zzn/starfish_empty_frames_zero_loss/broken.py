"""Sea-star detection on benthic sled-camera frames: empty frames return a constant focal loss.

Reduced from yhenon/pytorch-retinanet issue #144, "No annotation in image"
(https://github.com/yhenon/pytorch-retinanet/issues/144).

The author was training the repository's RetinaNet on their own data, some images of which have no
annotated object. The repository's FocalLoss loops over the images of a batch and, for an image
whose ``bbox_annotation`` is empty, appends ``torch.tensor(0).float()`` to both the classification
and the regression losses and ``continue``s; the two losses are ``torch.stack(...).mean()`` over the
batch. When every image of a batch is empty both losses are constants with no ``grad_fn``, and
``.backward()`` fails with "RuntimeError: element 0 of tensors does not require grad and does not
have a grad_fn", as the author says ("your return tensors which do not have a grad_fn thus the
.backward() call throw an exception"), asking how to fix it. The evident intent: an image with no
object is still a training example, every anchor of it background, so the classification head is
still trained on it (the focal loss against all-zero targets) and only the box regression has
nothing to learn.

Reduction: a sled camera towed over the seabed films mostly bare sediment; sea stars are annotated
as boxes. A tiny conv backbone feeds a classification and a regression subnet over anchors of a
4x4 grid; the FocalLoss keeps the report's per-image loop, including the constant for an empty
image; the training loop is the user's own (no skip of zero losses) with Adam and gradient
clipping. The third batch of each epoch is a run of empty frames.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(144)

HPARAMS = {
    "image_size": 16,
    "grid": 4,
    "num_classes": 1,      # sea star
    "batch_size": 3,
    "num_batches": 4,
    "empty_batch": 2,      # index of the batch whose frames are all bare sediment
    "num_epochs": 2,
    "lr": 1e-3,
    "alpha": 0.25,
    "gamma": 2.0,
}


def make_anchors(grid, image_size):
    step = image_size / grid
    centres = (torch.arange(grid, dtype=torch.float32) + 0.5) * step
    cy, cx = torch.meshgrid(centres, centres, indexing="ij")
    half = step
    return torch.stack([cx - half, cy - half, cx + half, cy + half], dim=-1).view(-1, 4)


def box_iou(a, b):
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(dim=2)
    return inter / (area_a[:, None] + area_b[None, :] - inter)


class SledBackbone(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.conv1 = nn.Conv2d(3, ch, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(ch, ch, 3, stride=2, padding=1)

    def forward(self, x):
        return F.relu(self.conv2(F.relu(self.conv1(x))))


class ClassificationModel(nn.Module):
    def __init__(self, ch, num_classes):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch, 3, padding=1)
        self.output = nn.Conv2d(ch, num_classes, 3, padding=1)

    def forward(self, x):
        out = torch.sigmoid(self.output(F.relu(self.conv(x))))
        return out.permute(0, 2, 3, 1).reshape(x.size(0), -1, out.size(1))


class RegressionModel(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch, 3, padding=1)
        self.output = nn.Conv2d(ch, 4, 3, padding=1)

    def forward(self, x):
        out = self.output(F.relu(self.conv(x)))
        return out.permute(0, 2, 3, 1).reshape(x.size(0), -1, 4)


class FocalLoss(nn.Module):
    def __init__(self, alpha, gamma):
        super().__init__()
        self.alpha = alpha
        self.gamma = gamma

    def forward(self, classifications, regressions, anchors, annotations):
        classification_losses = []
        regression_losses = []
        anchor_w = anchors[:, 2] - anchors[:, 0]
        anchor_h = anchors[:, 3] - anchors[:, 1]
        anchor_cx = anchors[:, 0] + 0.5 * anchor_w
        anchor_cy = anchors[:, 1] + 0.5 * anchor_h
        for j in range(classifications.shape[0]):
            classification = classifications[j].clamp(1e-4, 1.0 - 1e-4)
            regression = regressions[j]
            bbox_annotation = annotations[j]
            bbox_annotation = bbox_annotation[bbox_annotation[:, 4] != -1]

            if bbox_annotation.shape[0] == 0:
                regression_losses.append(torch.tensor(0).float())
                classification_losses.append(torch.tensor(0).float())
                continue

            iou = box_iou(anchors, bbox_annotation[:, :4])
            iou_max, iou_argmax = iou.max(dim=1)
            targets = torch.zeros_like(classification)
            positive = iou_max >= 0.5
            assigned = bbox_annotation[iou_argmax]
            targets[positive, assigned[positive, 4].long()] = 1

            alpha_factor = torch.where(targets == 1, torch.full_like(targets, self.alpha),
                                       torch.full_like(targets, 1 - self.alpha))
            focal_weight = torch.where(targets == 1, 1 - classification, classification)
            focal_weight = alpha_factor * focal_weight ** self.gamma
            bce = -(targets * torch.log(classification) + (1 - targets) * torch.log(1 - classification))
            classification_losses.append((focal_weight * bce).sum() / positive.sum().clamp(min=1))

            if positive.any():
                gt = assigned[positive]
                gt_w = gt[:, 2] - gt[:, 0]
                gt_h = gt[:, 3] - gt[:, 1]
                gt_cx = gt[:, 0] + 0.5 * gt_w
                gt_cy = gt[:, 1] + 0.5 * gt_h
                target_reg = torch.stack([
                    (gt_cx - anchor_cx[positive]) / anchor_w[positive],
                    (gt_cy - anchor_cy[positive]) / anchor_h[positive],
                    torch.log(gt_w / anchor_w[positive]),
                    torch.log(gt_h / anchor_h[positive]),
                ], dim=1)
                regression_losses.append(F.smooth_l1_loss(regression[positive], target_reg))
            else:
                regression_losses.append(torch.tensor(0).float())
        return torch.stack(classification_losses).mean(), torch.stack(regression_losses).mean()


def make_sled_batches(hp, anchors):
    batches = []
    size = hp["image_size"]
    for b in range(hp["num_batches"]):
        images = 0.3 + 0.1 * torch.rand(hp["batch_size"], 3, size, size)   # sediment
        annotations = torch.full((hp["batch_size"], 2, 5), -1.0)
        if b != hp["empty_batch"]:
            for j in range(hp["batch_size"]):
                k = int(torch.randint(0, anchors.size(0), (1,)))
                box = anchors[k] + torch.randn(4) * 0.5
                annotations[j, 0] = torch.cat([box, torch.zeros(1)])
                x0, y0, x1, y1 = [int(v) for v in box.clamp(0, size - 1)]
                images[j, 0, y0:y1 + 1, x0:x1 + 1] = 0.9                     # orange arms
        batches.append((images, annotations))
    return batches


def main():
    hp = HPARAMS
    anchors = make_anchors(hp["grid"], hp["image_size"])
    train_batches = make_sled_batches(hp, anchors)
    backbone = SledBackbone()
    classifier = ClassificationModel(16, hp["num_classes"])
    regressor = RegressionModel(16)
    criterion = FocalLoss(hp["alpha"], hp["gamma"])
    params = list(backbone.parameters()) + list(classifier.parameters()) + list(regressor.parameters())
    optimizer = torch.optim.Adam(params, lr=hp["lr"])

    for epoch in range(hp["num_epochs"]):
        epoch_loss = []
        for iter_num, (img_batch, annotations) in enumerate(train_batches):
            optimizer.zero_grad()
            features = backbone(img_batch)
            classification_loss, regression_loss = criterion(classifier(features), regressor(features),
                                                             anchors, annotations)
            loss = classification_loss + regression_loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 0.1)
            optimizer.step()
            epoch_loss.append(loss.item())
        print(f"epoch {epoch}: mean loss {sum(epoch_loss) / len(epoch_loss):.4f}")


if __name__ == "__main__":
    main()
