"""Herbarium sheet classification with a learned colour correction followed by an intensity normaliser.

Source: https://github.com/ProjectNeura/MIPCandy/issues/156 ("`Normalize`: vanished gradient due to
in-place operations", fixed by pull request #159). MIPCandy's ``Normalize`` module cut its input to a
window with masked assignments, ``x[x < left] = left`` and ``x[x > right] = right``, which modify ``x``
in place and break the gradient when ``x`` is part of a graph that requires grad.

Reduction: the training setting is the writer's (herbarium specimen classification). Scanned sheets
pass through a learned per-pixel colour correction that ends in a sigmoid, then through a window
normaliser written like MIPCandy's, then a small CNN. The masked assignments overwrite the sigmoid's
output, which the sigmoid saved for its backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SETTINGS = {"families": 5, "image": 32, "batch": 12, "epochs": 3, "lr": 1e-3, "window": (0.15, 0.85)}


class Normalize(nn.Module):
    """Cut intensities to a window and rescale it to [0, 1]."""

    def __init__(self, left=None, right=None):
        super().__init__()
        self.left, self.right = left, right

    def cut(self, x):
        if self.left is not None:
            x[x < self.left] = self.left
        if self.right is not None:
            x[x > self.right] = self.right
        return x

    def forward(self, x):
        x = self.cut(x)
        lo = self.left if self.left is not None else x.min()
        hi = self.right if self.right is not None else x.max()
        return (x - lo) / (hi - lo)


class ColourCorrection(nn.Module):
    """Undo the yellowing of old sheets: a 1x1 colour mixing learned end to end."""

    def __init__(self):
        super().__init__()
        self.mix = nn.Conv2d(3, 3, 1)
        nn.init.eye_(self.mix.weight.view(3, 3))
        self.mix.weight.data.mul_(4.0)
        nn.init.constant_(self.mix.bias, -2.0)

    def forward(self, x):
        return torch.sigmoid(self.mix(x))


class SpecimenClassifier(nn.Module):
    def __init__(self, n_families, window):
        super().__init__()
        self.colour = ColourCorrection()
        self.normalize = Normalize(*window)
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, n_families)

    def forward(self, sheets):
        x = self.normalize(self.colour(sheets))
        return self.head(self.backbone(x).flatten(1))


def make_sheets(n, cfg):
    """Pale paper with a darker leaf blob; each family has its own leaf hue and aspect ratio."""
    size = cfg["image"]
    labels = torch.randint(0, cfg["families"], (n,))
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, size), torch.linspace(-1, 1, size), indexing="ij")
    hue = torch.rand(cfg["families"], 3) * 0.5
    aspect = 0.3 + 0.7 * torch.rand(cfg["families"])
    sheets = 0.8 + 0.1 * torch.rand(n, 3, 1, 1).expand(n, 3, size, size).clone()
    for i in range(n):
        c = labels[i]
        leaf = ((xx / aspect[c]) ** 2 + (yy / 0.8) ** 2) < 0.5
        sheets[i][:, leaf] = hue[c][:, None]
    return sheets + 0.03 * torch.randn_like(sheets), labels


def run_epoch(classifier, optimizer, sheets, labels, batch):
    total = 0.0
    for start in range(0, len(labels), batch):
        x, y = sheets[start : start + batch], labels[start : start + batch]
        optimizer.zero_grad()
        loss = F.cross_entropy(classifier(x), y, label_smoothing=0.1)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


def main(cfg=SETTINGS):
    torch.manual_seed(5)
    sheets, labels = make_sheets(3 * cfg["batch"], cfg)
    classifier = SpecimenClassifier(cfg["families"], cfg["window"])
    optimizer = torch.optim.AdamW(classifier.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        print(f"epoch {epoch}: loss {run_epoch(classifier, optimizer, sheets, labels, cfg['batch']):.4f}")


if __name__ == "__main__":
    main()
