"""Individual re-identification of animals in camera-trap crops (lynx / zebra flank patterns).

Reduced from https://github.com/KaiyangZhou/deep-person-reid/issues/373: the author switched
torchreid's config from ``loss.name: softmax`` to ``triplet`` and kept the warm-up that
"only trains ['classifier']" for the first ``fixbase_epoch`` epochs.  The triplet engine's
default ``weight_x`` is 0, so only the triplet loss is added; it is computed on the embedding
*before* the classifier, whose layers are all frozen during the warm-up, and the first
``loss.backward()`` fails with "element 0 of tensors does not require grad and does not have a
grad_fn".  The training setting (camera-trap individuals instead of Market-1501 pedestrians)
is the writer's; the engine's logic (open_specified_layers, loss summed only for positive
weights) follows torchreid's ImageTripletEngine.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_IDS = 6        # individuals seen in the training camera stations
PER_ID = 4         # PK sampling: P identities x K crops per batch
CROP = (3, 32, 32)


def make_camera_trap_crops(num_ids, per_id, steps):
    """Synthetic flank crops: each individual has a fixed stripe/spot template plus noise."""
    templates = torch.randn(num_ids, *CROP)
    batches = []
    for _ in range(steps):
        ids = torch.arange(num_ids).repeat_interleave(per_id)
        imgs = templates[ids] + 0.5 * torch.randn(len(ids), *CROP)
        batches.append((imgs, ids))
    return batches


class ReIDNet(nn.Module):
    """Small backbone, BNNeck-style embedding, identity classifier."""

    def __init__(self, num_classes, dim=64):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Linear(32, dim),
        )
        self.bnneck = nn.BatchNorm1d(dim)
        self.classifier = nn.Linear(dim, num_classes)

    def forward(self, x):
        feat = self.backbone(x)
        logits = self.classifier(self.bnneck(feat))
        return logits, feat


def open_specified_layers(model, open_layers):
    for name, module in model.named_children():
        train = name in open_layers
        module.train(train)
        for p in module.parameters():
            p.requires_grad = train


def open_all_layers(model):
    model.train()
    for p in model.parameters():
        p.requires_grad = True


def batch_hard_triplet(feat, pids, margin=0.3):
    dist = torch.cdist(feat, feat)
    same = pids[:, None] == pids[None, :]
    d_ap = (dist * same.float()).max(dim=1).values
    d_an = (dist + 1e6 * same.float()).min(dim=1).values
    return F.relu(d_ap - d_an + margin).mean()


cfg = dict(weight_t=1.0, weight_x=1.0, fixbase_epoch=1, open_layers=["classifier"], max_epoch=3)

model = ReIDNet(NUM_IDS)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
loader = make_camera_trap_crops(NUM_IDS, PER_ID, steps=2)

for epoch in range(cfg["max_epoch"]):
    if epoch + 1 <= cfg["fixbase_epoch"]:
        print(f"* Only train {cfg['open_layers']} (epoch: {epoch + 1}/{cfg['fixbase_epoch']})")
        open_specified_layers(model, cfg["open_layers"])
    else:
        open_all_layers(model)
    for imgs, pids in loader:
        optimizer.zero_grad()
        outputs, features = model(imgs)
        loss = 0
        if cfg["weight_t"] > 0:
            loss_t = batch_hard_triplet(features, pids)
            loss = loss + cfg["weight_t"] * loss_t
        if cfg["weight_x"] > 0:
            loss_x = F.cross_entropy(outputs, pids, label_smoothing=0.1)
            loss = loss + cfg["weight_x"] * loss_x
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch + 1}: loss {loss.item():.4f}")
