"""Galaxy morphology classification from five-band cutouts with a learnable per-band gain.

Source: https://discuss.pytorch.org/t/leaf-variable-was-used-in-an-inplace-operation/308

The thread is about changing, in place, a tensor that requires grad and that the
author created directly (a leaf); the replies explain that PyTorch refuses in-place
operations on such leaves while autograd records, and that parameters are initialised
or updated in place outside of it (through .data at the time). The reduction: a small
CNN over ugriz cutouts whose first operation multiplies each band by a learnable gain,
and a constraint hook run after every optimizer step that keeps the gains positive by
clamping the parameter in place, as one projects parameters after a step by hand.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BANDS = 5
CLASSES = ("elliptical", "spiral", "edge-on", "merger")
PIXELS = 16
BATCH = 24
ITERS = 6


class MorphologyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.band_gain = nn.Parameter(torch.ones(BANDS))
        self.features = nn.Sequential(
            nn.Conv2d(BANDS, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(32, len(CLASSES))

    def forward(self, cutouts):
        x = cutouts * self.band_gain.view(1, -1, 1, 1)
        x = torch.asinh(x)
        return self.classifier(self.features(x).flatten(1))


def enforce_constraints(model, min_gain=0.05, max_gain=20.0):
    model.band_gain.clamp_(min=min_gain, max=max_gain)


def synth_cutouts():
    labels = torch.randint(0, len(CLASSES), (BATCH,))
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, PIXELS), torch.linspace(-1, 1, PIXELS), indexing="ij")
    r = (xx ** 2 + yy ** 2).sqrt()
    theta = torch.atan2(yy, xx)
    imgs = []
    for lab in labels.tolist():
        if lab == 0:
            prof = torch.exp(-3 * r)
        elif lab == 1:
            prof = torch.exp(-2 * r) * (1 + 0.5 * torch.cos(2 * theta + 4 * r))
        elif lab == 2:
            prof = torch.exp(-8 * yy.abs() - 1.5 * xx.abs())
        else:
            prof = torch.exp(-4 * ((xx - 0.3) ** 2 + yy ** 2)) + torch.exp(-4 * ((xx + 0.3) ** 2 + yy ** 2))
        sed = torch.rand(BANDS, 1, 1) + 0.5
        imgs.append(sed * prof + 0.05 * torch.randn(BANDS, PIXELS, PIXELS))
    return torch.stack(imgs), labels


def main():
    torch.manual_seed(21)
    net = MorphologyNet()
    optimizer = torch.optim.Adam(net.parameters(), lr=5e-3)
    for it in range(ITERS):
        cutouts, labels = synth_cutouts()
        logits = net(cutouts)
        ce_loss = F.cross_entropy(logits, labels, label_smoothing=0.05)
        optimizer.zero_grad()
        ce_loss.backward()
        optimizer.step()
        enforce_constraints(net)
        acc = (logits.argmax(1) == labels).float().mean().item()
        print(f"iter {it}: loss {ce_loss.item():.4f} acc {acc:.2f}")


if __name__ == "__main__":
    main()
