"""Vineyard yield banding across two regions, with per-class prototype alignment.

Source: https://github.com/imatif17/Prototype-Mean-Teacher/issues/14 . Prototype Mean Teacher
keeps class prototypes of each domain on the model (prototype_s1, prototype_s2, prototype_t),
updates them from the current features, and builds an alignment loss from the cosine
similarity of the domains' prototypes. The issue asks why the prototypes are detached in
place before the contrastive term is computed (the graph is cut, so that term trains
nothing); the maintainer answers that the detach belongs after the losses. Keeping the
prototypes attached and never detaching them is the other way to get it wrong: the prototype
tensors then carry the previous step's graph into the next step's loss.

Reduction: the writer's setting is vineyard yield forecasting. Blocks in two wine regions are
described by canopy and weather features and labelled low / medium / high yield. A shared
encoder and classifier are trained on both regions, and a prototype bank (a plain object)
keeps one running prototype per region and class, pulled towards each batch's class means;
the loss aligns the two regions' prototypes. The bank is never detached.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

SETTINGS = dict(features=14, hidden=24, classes=3, blocks_per_region=120,
                batch=24, steps=12, lr=2e-3, momentum=0.8, align_weight=0.5)


class BlockEncoder(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.GELU(),
                                 nn.Linear(hidden, hidden), nn.GELU())

    def forward(self, x):
        return self.net(x)


class PrototypeBank:
    """Running class prototypes of the two regions."""

    def __init__(self, classes, dim, momentum):
        self.momentum = momentum
        self.classes = classes
        self.source = torch.zeros(classes, dim)
        self.target = torch.zeros(classes, dim)

    def _pull(self, current, feats, labels):
        onehot = F.one_hot(labels, self.classes).float()
        counts = onehot.sum(0)
        means = onehot.t() @ feats / counts.clamp(min=1).unsqueeze(1)
        seen = (counts > 0).float().unsqueeze(1)
        mixed = self.momentum * current + (1 - self.momentum) * means
        return seen * mixed + (1 - seen) * current

    def update(self, src_feats, src_labels, tgt_feats, tgt_labels):
        self.source = self._pull(self.source, src_feats, src_labels)
        self.target = self._pull(self.target, tgt_feats, tgt_labels)

    def alignment(self):
        return (1 - F.cosine_similarity(self.source, self.target, dim=1)).mean()


def simulate_region(n, features, shift):
    x = torch.randn(n, features)
    x[:, :3] += shift
    score = x[:, 0] * 0.8 + x[:, 1] * 0.5 - x[:, 2] * 0.3 + 0.2 * torch.randn(n)
    labels = torch.bucketize(score, torch.tensor([-0.4, 0.6]) + shift)
    return x, labels


def sample(x, y, batch):
    idx = torch.randint(0, x.shape[0], (batch,))
    return x[idx], y[idx]


def train(cfg):
    src_x, src_y = simulate_region(cfg["blocks_per_region"], cfg["features"], 0.0)
    tgt_x, tgt_y = simulate_region(cfg["blocks_per_region"], cfg["features"], 0.7)

    encoder = BlockEncoder(cfg["features"], cfg["hidden"])
    classifier = nn.Linear(cfg["hidden"], cfg["classes"])
    bank = PrototypeBank(cfg["classes"], cfg["hidden"], cfg["momentum"])
    opt = torch.optim.Adam(list(encoder.parameters()) + list(classifier.parameters()), lr=cfg["lr"])

    for step in range(cfg["steps"]):
        xs, ys = sample(src_x, src_y, cfg["batch"])
        xt, yt = sample(tgt_x, tgt_y, cfg["batch"])
        fs, ft = encoder(xs), encoder(xt)

        cls_loss = F.cross_entropy(classifier(fs), ys) + F.cross_entropy(classifier(ft), yt)
        bank.update(fs, ys, ft, yt)
        align_loss = bank.alignment()
        total = cls_loss + cfg["align_weight"] * align_loss

        opt.zero_grad()
        total.backward()
        opt.step()

        if step % 4 == 0:
            print(f"step {step:2d}  cls {cls_loss.item():.3f}  align {align_loss.item():.3f}")


if __name__ == "__main__":
    train(SETTINGS)
