"""A segmentation net whose auxiliary head computes its deep-supervision loss inside forward, in training mode
only, and keeps it on itself; the training function reads it after each forward and adds it to the main loss.
Every third step a quick evaluation runs on held-out batches."""

import torch
import torch.nn.functional as F
from torch import nn


class AuxHead(nn.Module):
    def __init__(self, width: int, classes: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(width, classes, 1)
        self.aux = None

    def forward(self, feats, target=None):
        logits = self.proj(feats)
        if self.training:
            self.aux = F.cross_entropy(logits, target)
        return logits


class SegNet(nn.Module):
    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(8, classes, 1)
        self.side = AuxHead(8, classes)

    def forward(self, img, mask=None):
        feats = self.body(img)
        self.side(feats, mask)
        return self.head(feats)


def evaluate(model, batches):
    model.eval()
    with torch.no_grad():
        return sum((model(img).argmax(1) == mask).float().mean().item() for img, mask in batches) / len(batches)


def train(model, opt, batches, held_out):
    for step, (img, mask) in enumerate(batches):
        model.train()  # evaluate() leaves the model in eval mode
        out = model(img, mask)
        total = F.cross_entropy(out, mask) + 0.4 * model.side.aux
        opt.zero_grad()
        total.backward()
        opt.step()
        if step % 3 == 2:
            print(f"step {step}: pixel accuracy {evaluate(model, held_out):.3f}")


torch.manual_seed(21)
net = SegNet()
sgd = torch.optim.SGD(net.parameters(), lr=0.05)
data = [(torch.randn(2, 1, 8, 8), torch.randint(0, 3, (2, 8, 8))) for _ in range(6)]
val = [(torch.randn(2, 1, 8, 8), torch.randint(0, 3, (2, 8, 8))) for _ in range(2)]
train(net, sgd, data, val)
