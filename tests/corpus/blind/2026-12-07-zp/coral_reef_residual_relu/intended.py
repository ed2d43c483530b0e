"""Coral-reef benthic segmentation with a small residual encoder-decoder.

Source: https://discuss.pytorch.org/t/when-inplace-operation-are-allowed-and-when-not/169583
The author took a ResNet BasicBlock from GitHub that adds the shortcut with
``out += self.shortcut(x)`` and asked why that in-place add works there while
similar in-place adds in other models raised "one of the variables needed for
gradient computation has been modified by an inplace operation". The answer
explains that it depends on whether the op that produced the tensor saved it
for backward (a batch-norm output is not needed, an ``exp`` output is).

Reduction: a residual U-Net-like model that labels each pixel of an underwater
RGB tile as live coral, bleached coral, algae, sand or water. The residual
block is written with its activation before the shortcut add.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

CLASSES = ["live_coral", "bleached_coral", "macroalgae", "sand", "water"]
SETTINGS = {"tile": 32, "n_tiles": 24, "batch": 6, "width": 16, "epochs": 2, "lr": 1e-3}


class ResidualBlock(nn.Module):
    def __init__(self, in_ch, out_ch, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False), nn.BatchNorm2d(out_ch)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = out + self.shortcut(x)
        return out


class ReefSegNet(nn.Module):
    def __init__(self, n_classes, width):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.enc1 = ResidualBlock(width, width)
        self.enc2 = ResidualBlock(width, 2 * width, stride=2)
        self.up = nn.ConvTranspose2d(2 * width, width, 2, stride=2)
        self.dec = ResidualBlock(2 * width, width)
        self.classifier = nn.Conv2d(width, n_classes, 1)

    def forward(self, img):
        s = self.enc1(self.stem(img))
        d = self.up(self.enc2(s))
        return self.classifier(self.dec(torch.cat([d, s], dim=1)))


def make_tiles(n, size):
    imgs = torch.rand(n, 3, size, size)
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    masks = []
    for i in range(n):
        cx, cy = torch.randint(0, size, (2,))
        r = ((xx - cx) ** 2 + (yy - cy) ** 2).float().sqrt()
        masks.append(torch.clamp((r / (size / 4)).long(), max=len(CLASSES) - 1))
    return imgs, torch.stack(masks)


def mean_iou(logits, target, n_classes):
    pred = logits.argmax(1)
    ious = []
    for c in range(n_classes):
        inter = ((pred == c) & (target == c)).sum().item()
        union = ((pred == c) | (target == c)).sum().item()
        if union:
            ious.append(inter / union)
    return sum(ious) / max(len(ious), 1)


def train(cfg=SETTINGS):
    imgs, masks = make_tiles(cfg["n_tiles"], cfg["tile"])
    segmenter = ReefSegNet(len(CLASSES), cfg["width"])
    opt = torch.optim.AdamW(segmenter.parameters(), lr=cfg["lr"], weight_decay=1e-4)
    class_weights = torch.tensor([2.0, 2.0, 1.0, 0.5, 0.5])
    for epoch in range(cfg["epochs"]):
        for start in range(0, cfg["n_tiles"], cfg["batch"]):
            x = imgs[start:start + cfg["batch"]]
            t = masks[start:start + cfg["batch"]]
            logits = segmenter(x)
            seg_loss = F.cross_entropy(logits, t, weight=class_weights)
            opt.zero_grad()
            seg_loss.backward()
            opt.step()
        print(f"epoch {epoch}: loss {seg_loss.item():.3f} mIoU {mean_iou(logits.detach(), t, len(CLASSES)):.3f}")


if __name__ == "__main__":
    train()
