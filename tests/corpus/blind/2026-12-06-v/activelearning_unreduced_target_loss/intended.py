"""Active learning with a loss-prediction module (Learning Loss for Active Learning): the per-sample target loss is backwarded unreduced.

Source: https://github.com/mindee/doctr/pull/379

In docTR's PyTorch SAR and MASTER recognition models, ``compute_loss`` returned
the per-sample cross-entropy (``ce_loss.unsqueeze(1)``): the loss is built
without reduction so that padded positions can be masked per sample, and the
reduction to one number was forgotten, so training failed in ``backward()``
with "grad can be implicitly created only for scalar outputs".  The fix returns
``ce_loss.mean()``.  The training setting is the writer's: the learning-loss
method keeps the backbone's cross-entropy unreduced too, because the loss
module is trained to rank the per-sample losses; the script adds that vector
to the module's ranking loss and backwards the sum, on a small CNN and
synthetic 16x16 images, with a labelled set grown by the samples of highest
predicted loss.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_POOL, N_CLASSES, SIDE = 1200, 4, 16
INITIAL_LABELLED = 200
ADD_PER_CYCLE = 100
SUBSET = 400
CYCLES = 2
EPOCHS = 4
EPOCH_LOSS = 2  # after this epoch the module's loss no longer reaches the backbone
BATCH = 64
MARGIN = 1.0
WEIGHT = 1.0


def make_pool():
    """Images with a class-dependent oriented stripe pattern plus noise."""
    y = torch.randint(0, N_CLASSES, (N_POOL,))
    coords = torch.linspace(-1, 1, SIDE)
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    angles = y.float() * (torch.pi / N_CLASSES)
    phase = torch.cos(angles)[:, None, None] * xx + torch.sin(angles)[:, None, None] * yy
    x = torch.sin(6.0 * phase) + 0.5 * torch.randn(N_POOL, SIDE, SIDE)
    return x.unsqueeze(1), y


class Backbone(nn.Module):
    """Three conv stages; returns the logits and the stage features for the loss module."""

    def __init__(self):
        super().__init__()
        self.stage1 = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.stage2 = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.stage3 = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.fc = nn.Linear(32, N_CLASSES)

    def forward(self, x):
        f1 = self.stage1(x)
        f2 = self.stage2(f1)
        f3 = self.stage3(f2)
        logits = self.fc(F.adaptive_avg_pool2d(f3, 1).flatten(1))
        return logits, [f1, f2, f3]


class LossNet(nn.Module):
    """Loss-prediction module: GAP + FC on each stage, concatenated, to one predicted loss per sample."""

    def __init__(self, channels=(8, 16, 32), interm_dim=32):
        super().__init__()
        self.fcs = nn.ModuleList([nn.Linear(c, interm_dim) for c in channels])
        self.out = nn.Linear(interm_dim * len(channels), 1)

    def forward(self, features):
        hs = [F.relu(fc(F.adaptive_avg_pool2d(f, 1).flatten(1))) for fc, f in zip(self.fcs, features)]
        return self.out(torch.cat(hs, dim=1)).view(-1)


def loss_pred_loss(pred, target, margin=MARGIN):
    """Pairwise ranking loss between predicted and true per-sample losses."""
    assert len(pred) % 2 == 0, "the batch size should be even"
    pred = (pred - pred.flip(0))[: len(pred) // 2]
    target = (target - target.flip(0))[: len(target) // 2]
    target = target.detach()
    sign = 2 * torch.sign(torch.clamp(target, min=0)) - 1
    return torch.sum(torch.clamp(margin - sign * pred, min=0)) / pred.size(0)


def train_epoch(backbone, loss_module, criterion, optim_backbone, optim_module, x, y, labelled, epoch):
    backbone.train()
    loss_module.train()
    perm = labelled[torch.randperm(len(labelled))]
    for start in range(0, len(perm) - BATCH + 1, BATCH):
        idx = perm[start:start + BATCH]
        scores, features = backbone(x[idx])
        target_loss = criterion(scores, y[idx])  # per sample: the loss module learns to predict it
        if epoch > EPOCH_LOSS:
            features = [f.detach() for f in features]
        pred_loss = loss_module(features)
        m_module_loss = loss_pred_loss(pred_loss, target_loss)
        m_backbone_loss = torch.sum(target_loss) / target_loss.size(0)
        loss = m_backbone_loss + WEIGHT * m_module_loss
        optim_backbone.zero_grad()
        optim_module.zero_grad()
        loss.backward()
        optim_backbone.step()
        optim_module.step()


def predicted_uncertainty(backbone, loss_module, x):
    backbone.eval()
    loss_module.eval()
    with torch.no_grad():
        _, features = backbone(x)
        return loss_module(features)


def test_accuracy(backbone, x, y):
    backbone.eval()
    with torch.no_grad():
        return (backbone(x)[0].argmax(dim=1) == y).float().mean().item()


def main():
    x, y = make_pool()
    perm = torch.randperm(N_POOL)
    test_idx, pool_idx = perm[:200], perm[200:]
    labelled, unlabelled = pool_idx[:INITIAL_LABELLED], pool_idx[INITIAL_LABELLED:]

    backbone = Backbone()
    loss_module = LossNet()
    criterion = nn.CrossEntropyLoss(reduction="none")
    optim_backbone = torch.optim.SGD(backbone.parameters(), lr=0.02, momentum=0.9, weight_decay=5e-4)
    optim_module = torch.optim.SGD(loss_module.parameters(), lr=0.02, momentum=0.9, weight_decay=5e-4)

    for cycle in range(CYCLES):
        for epoch in range(EPOCHS):
            train_epoch(backbone, loss_module, criterion, optim_backbone, optim_module, x, y, labelled, epoch)
        acc = test_accuracy(backbone, x[test_idx], y[test_idx])
        print(f"cycle {cycle} labelled {len(labelled)} test acc {acc:.3f}")

        # query the samples of highest predicted loss from a random subset of the pool
        subset = unlabelled[torch.randperm(len(unlabelled))[:SUBSET]]
        uncertainty = predicted_uncertainty(backbone, loss_module, x[subset])
        chosen = subset[torch.argsort(uncertainty, descending=True)[:ADD_PER_CYCLE]]
        labelled = torch.cat([labelled, chosen])
        keep = ~torch.isin(unlabelled, chosen)
        unlabelled = unlabelled[keep]


if __name__ == "__main__":
    main()
