"""Person re-identification on a hook-based runner: gradient accumulation as the one optimizer hook.

Reduced from https://github.com/open-mmlab/mmcv/issues/1379 . The reporter wanted gradient
accumulation and added `GradientCumulativeOptimizerHook` to `custom_hooks` in an mmdetection
config, and the first iteration failed with "Trying to backward through the graph a second
time". The maintainer's answer: the base schedule already sets `optimizer_config`, so the runner
registers the ordinary `OptimizerHook` as well; both hooks call `backward()` on the iteration's
loss in `after_train_iter`. The fix is to make the cumulative hook *the* optimizer hook
(`optimizer_config = dict(type="GradientCumulativeOptimizerHook", cumulative_iters=...)`). The
report is a detector's config; the training setting is the writer's: a re-ID model (BNNeck
embedding, identity classifier) trained with label-smoothed ID loss, batch-hard triplet loss and
a pull towards a memory of per-identity centroids (kept by a hook under no_grad), on PK-sampled
batches, with a small mmcv-style runner, its hooks and a config merged from a base schedule.

Synthetic 3x16x8 "pedestrian crops" of 8 identities, CPU.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_IDS, PER_ID = 8, 6
P, K = 4, 4
EMB = 32

# ---------------------------------------------------------------- config (base schedule + this experiment)
base_schedule = dict(
    optimizer=dict(lr=3.5e-3, momentum=0.9, weight_decay=5e-4),
    optimizer_config=dict(grad_clip=dict(max_norm=5.0)),
    max_iters=6,
)
cfg = copy.deepcopy(base_schedule)
cfg.update(
    optimizer_config=dict(type="GradientCumulativeOptimizerHook", cumulative_iters=2, grad_clip=dict(max_norm=5.0)),
    custom_hooks=[
        dict(type="CentroidMemoryHook", momentum=0.5),
    ],
    loss_weights=dict(id=1.0, triplet=1.0, centroid=5e-3),
)


# ---------------------------------------------------------------- hooks and runner
class Hook:
    priority = 50

    def after_train_iter(self, runner):
        pass


class OptimizerHook(Hook):
    priority = 30  # runs before the NORMAL ones, as in mmcv

    def __init__(self, grad_clip=None):
        self.grad_clip = grad_clip

    def clip_grads(self, params):
        return nn.utils.clip_grad_norm_([p for p in params if p.requires_grad], **self.grad_clip)

    def after_train_iter(self, runner):
        runner.optimizer.zero_grad()
        runner.outputs["loss"].backward()
        if self.grad_clip is not None:
            self.clip_grads(runner.model.parameters())
        runner.optimizer.step()


class GradientCumulativeOptimizerHook(OptimizerHook):
    def __init__(self, cumulative_iters=1, **kwargs):
        super().__init__(**kwargs)
        self.cumulative_iters = cumulative_iters

    def after_train_iter(self, runner):
        loss = runner.outputs["loss"] / self.cumulative_iters
        loss.backward()
        if (runner.iter + 1) % self.cumulative_iters == 0:
            if self.grad_clip is not None:
                self.clip_grads(runner.model.parameters())
            runner.optimizer.step()
            runner.optimizer.zero_grad()


class CentroidMemoryHook(Hook):
    """Moves each identity's centroid towards the mean feature of its samples in the batch."""

    def __init__(self, momentum):
        self.momentum = momentum

    @torch.no_grad()
    def after_train_iter(self, runner):
        feats, pids = runner.outputs["feats"], runner.outputs["pids"]
        for pid in pids.unique():
            mean = F.normalize(feats[pids == pid].mean(0), dim=0)
            runner.model.centroids[pid] = self.momentum * runner.model.centroids[pid] + (1 - self.momentum) * mean


HOOKS = {cls.__name__: cls for cls in (OptimizerHook, GradientCumulativeOptimizerHook, CentroidMemoryHook)}


def build_hook(spec):
    spec = dict(spec)
    return HOOKS[spec.pop("type", "OptimizerHook")](**spec)


class Runner:
    def __init__(self, model, optimizer, batch_processor):
        self.model, self.optimizer, self.batch_processor = model, optimizer, batch_processor
        self.hooks, self.iter, self.outputs = [], 0, None

    def register_hook(self, hook):
        self.hooks.append(hook)
        self.hooks.sort(key=lambda h: h.priority)

    def register_training_hooks(self, optimizer_config, custom_hooks=()):
        if optimizer_config is not None:
            self.register_hook(build_hook(optimizer_config))
        for spec in custom_hooks:
            self.register_hook(build_hook(spec))

    def run(self, data_iter, max_iters):
        self.model.train()
        while self.iter < max_iters:
            self.outputs = self.batch_processor(self.model, next(data_iter))
            for hook in self.hooks:
                hook.after_train_iter(self)
            if self.iter % 2 == 1:
                print(f"iter {self.iter}: " + "  ".join(f"{k} {v:.3f}" for k, v in self.outputs["log_vars"].items()))
            self.iter += 1


# ---------------------------------------------------------------- model, losses, data
class ReIDNet(nn.Module):
    def __init__(self, num_ids, emb=EMB):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, emb, 3, stride=2, padding=1), nn.BatchNorm2d(emb), nn.ReLU(),
        )
        self.bnneck = nn.BatchNorm1d(emb)
        self.bnneck.bias.requires_grad_(False)
        self.classifier = nn.Linear(emb, num_ids, bias=False)
        self.register_buffer("centroids", F.normalize(torch.randn(num_ids, emb), dim=1))

    def forward(self, x):
        feat = self.backbone(x).mean(dim=(2, 3))
        return feat, self.classifier(self.bnneck(feat))


def batch_hard_triplet(feats, pids, margin=0.3):
    dist = torch.cdist(feats, feats)
    same = pids[:, None] == pids[None, :]
    hardest_pos = (dist * same).max(dim=1).values
    hardest_neg = (dist + 1e4 * same).min(dim=1).values
    return F.relu(hardest_pos - hardest_neg + margin).mean()


def batch_processor(model, batch):
    imgs, pids = batch
    feats, logits = model(imgs)
    w = cfg["loss_weights"]
    id_loss = F.cross_entropy(logits, pids, label_smoothing=0.1)
    tri_loss = batch_hard_triplet(feats, pids)
    cen_loss = (1 - (F.normalize(feats, dim=1) * model.centroids[pids]).sum(1)).mean()
    loss = w["id"] * id_loss + w["triplet"] * tri_loss + w["centroid"] * cen_loss
    log_vars = dict(loss=loss.item(), id=id_loss.item(), tri=tri_loss.item())
    return dict(loss=loss, feats=feats.detach(), pids=pids, log_vars=log_vars)


def pk_batches(images, pids):
    """Random P identities x K instances per batch, forever."""
    while True:
        chosen = torch.randperm(NUM_IDS)[:P]
        idx = torch.cat([(pids == c).nonzero().view(-1)[torch.randperm(PER_ID)[:K]] for c in chosen])
        yield images[idx], pids[idx]


templates = torch.randn(NUM_IDS, 3, 16, 8)
pids = torch.arange(NUM_IDS).repeat_interleave(PER_ID)
images = templates[pids] + 0.5 * torch.randn(len(pids), 3, 16, 8)

model = ReIDNet(NUM_IDS)
optimizer = torch.optim.SGD(model.parameters(), **cfg["optimizer"])
runner = Runner(model, optimizer, batch_processor)
runner.register_training_hooks(cfg["optimizer_config"], cfg.get("custom_hooks", []))
runner.run(pk_batches(images, pids), cfg["max_iters"])
