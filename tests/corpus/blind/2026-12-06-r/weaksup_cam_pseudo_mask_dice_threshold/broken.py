"""Weakly-supervised segmentation from CAM pseudo-masks, reduced from a public report.

Source: https://github.com/qubvel-org/segmentation_models.pytorch/pull/611 ("Threshold for Dice
loss"). The report concerns segmentation_models.pytorch's ``utils`` losses, metrics and
``TrainEpoch`` runner, used here as the report's author used them; the training setting is the
writer's: image-level labels only, a frozen classifier's class activation maps thresholded into
pseudo-masks, and a small encoder-decoder segmentation net trained on them with Adam, the runner
logging IoU. Synthetic 1x16x16 images, CPU.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# ---- losses and metrics, segmentation_models.pytorch `utils` layout ----------------------------
def _threshold(x, threshold=None):
    if threshold is not None:
        return (x > threshold).type(x.dtype)
    return x


def f_score(pr, gt, beta=1.0, eps=1e-7, threshold=None):
    pr = _threshold(pr, threshold=threshold)
    tp = torch.sum(gt * pr)
    fp = torch.sum(pr) - tp
    fn = torch.sum(gt) - tp
    return ((1 + beta**2) * tp + eps) / ((1 + beta**2) * tp + beta**2 * fn + fp + eps)


def iou(pr, gt, eps=1e-7, threshold=None):
    pr = _threshold(pr, threshold=threshold)
    intersection = torch.sum(gt * pr)
    union = torch.sum(gt) + torch.sum(pr) - intersection + eps
    return (intersection + eps) / union


class DiceLoss(nn.Module):
    __name__ = "dice_loss"

    def __init__(self, eps=1.0, beta=1.0, activation=None, threshold=None):
        super().__init__()
        self.eps = eps
        self.beta = beta
        self.activation = activation
        self.threshold = threshold

    def forward(self, y_pr, y_gt):
        if self.activation == "sigmoid":
            y_pr = torch.sigmoid(y_pr)
        return 1 - f_score(y_pr, y_gt, beta=self.beta, eps=self.eps, threshold=self.threshold)


class IoU(nn.Module):
    __name__ = "iou_score"

    def __init__(self, threshold=0.5, activation=None):
        super().__init__()
        self.threshold = threshold
        self.activation = activation

    def forward(self, y_pr, y_gt):
        if self.activation == "sigmoid":
            y_pr = torch.sigmoid(y_pr)
        return iou(y_pr, y_gt, threshold=self.threshold)


class TrainEpoch:
    def __init__(self, model, loss, metrics, optimizer):
        self.model = model
        self.loss = loss
        self.metrics = metrics
        self.optimizer = optimizer

    def batch_update(self, x, y):
        self.optimizer.zero_grad()
        prediction = self.model.forward(x)
        loss = self.loss(prediction, y)
        loss.backward()
        self.optimizer.step()
        return loss, prediction

    def run(self, dataloader):
        self.model.train()
        logs = {}
        for x, y in dataloader:
            loss, y_pred = self.batch_update(x, y)
            logs[self.loss.__name__] = loss.item()
            for metric_fn in self.metrics:
                logs[metric_fn.__name__] = metric_fn(y_pred, y).item()
        return logs


# ---- weak supervision: CAM pseudo-masks from a frozen image classifier -------------------------
class CamClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(self.features(x).mean(dim=(2, 3)))

    def cam(self, x, cls=1):
        fmap = self.features(x)
        weights = self.fc.weight[cls].view(1, -1, 1, 1)
        cam = F.relu((fmap * weights).sum(1, keepdim=True))
        return cam / (cam.amax(dim=(2, 3), keepdim=True) + 1e-6)


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU())
        self.enc2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.dec = nn.Sequential(nn.Conv2d(16, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 1))

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(e1)
        return self.dec(torch.cat([self.up(e2), e1], dim=1))


def make_images(n):
    images = 0.1 * torch.randn(n, 1, 16, 16)
    has_object = torch.randint(0, 2, (n,))
    for i in range(n):
        if has_object[i]:
            r, c = torch.randint(2, 10, (2,)).tolist()
            images[i, 0, r : r + 5, c : c + 5] += 1.0
    return images, has_object


def pseudo_masks(classifier, images, has_object, cam_threshold=0.4):
    with torch.no_grad():
        cams = classifier.cam(images)
    masks = (cams > cam_threshold).float()
    return masks * has_object.view(-1, 1, 1, 1).float()


if __name__ == "__main__":
    images, has_object = make_images(24)
    classifier = CamClassifier()
    for p in classifier.parameters():
        p.requires_grad_(False)
    masks = pseudo_masks(classifier, images, has_object)
    loader = [(images[i : i + 8], masks[i : i + 8]) for i in range(0, 24, 8)]

    model = TinyUNet()
    loss = DiceLoss(activation="sigmoid", threshold=0.5)
    metrics = [IoU(threshold=0.5, activation="sigmoid")]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_epoch = TrainEpoch(model, loss=loss, metrics=metrics, optimizer=optimizer)
    for epoch in range(2):
        print(epoch, train_epoch.run(loader))
