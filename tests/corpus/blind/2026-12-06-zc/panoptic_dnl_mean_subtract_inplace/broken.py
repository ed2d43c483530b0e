"""Panoptic segmentation by mask classification, with a disentangled non-local block in the pixel decoder.

Source: https://github.com/open-mmlab/mmsegmentation/issues/3073 -- training mmsegmentation's DNLNet
(disentangled non-local head) failed in backward with "one of the variables needed for gradient
computation has been modified by an inplace operation". The head whitens its pairwise embeddings with
``theta_x -= theta_x.mean(dim=-2, keepdim=True)`` and ``phi_x -= phi_x.mean(dim=-1, keepdim=True)``;
the reporter's fix writes both lines out of place. Here the block runs in the head's "gaussian"
pairwise mode, where theta and phi are views of the block's input, so the two in-place subtractions
write into a tensor the ReLU before it and the value convolution saved for backward. The training
setting (a MaskFormer-style panoptic model: learned queries, class + mask heads, Hungarian matching,
a no-object class) is the writer's.
"""
import itertools

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_CLASSES, NUM_QUERIES, DIM = 4, 5, 16


class DisentangledNonLocal(nn.Module):
    def __init__(self, channels, temperature=0.5):
        super().__init__()
        self.g = nn.Conv2d(channels, channels, 1)
        self.conv_mask = nn.Conv2d(channels, 1, 1)
        self.conv_out = nn.Conv2d(channels, channels, 1)
        self.temperature = temperature

    def forward(self, x):
        n, c, h, w = x.shape
        g_x = self.g(x).view(n, c, -1).permute(0, 2, 1)
        theta_x = x.view(n, c, -1).permute(0, 2, 1)
        phi_x = x.view(n, c, -1)
        # whiten the pairwise terms (the "disentangled" part)
        theta_x -= theta_x.mean(dim=-2, keepdim=True)
        phi_x -= phi_x.mean(dim=-1, keepdim=True)
        pairwise = torch.matmul(theta_x, phi_x) / (c ** 0.5 * self.temperature)
        pairwise = pairwise.softmax(dim=-1)
        y = torch.matmul(pairwise, g_x).permute(0, 2, 1).reshape(n, c, h, w)
        unary = self.conv_mask(x).view(n, 1, -1).softmax(dim=-1)
        unary_x = torch.matmul(unary, g_x).permute(0, 2, 1).reshape(n, c, 1, 1)
        return x + self.conv_out(y + unary_x)


class MaskClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, DIM, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(DIM, DIM, 3, stride=2, padding=1), nn.ReLU())
        self.dnl = DisentangledNonLocal(DIM)
        self.mask_proj = nn.Conv2d(DIM, DIM, 1)
        self.queries = nn.Embedding(NUM_QUERIES, DIM)
        self.attn = nn.MultiheadAttention(DIM, 2, batch_first=True)
        self.class_head = nn.Linear(DIM, NUM_CLASSES + 1)
        self.mask_head = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, DIM))

    def forward(self, img):
        feats = self.dnl(self.backbone(img))
        mask_feats = self.mask_proj(feats)
        memory = feats.flatten(2).transpose(1, 2)
        q = self.queries.weight.unsqueeze(0).expand(img.shape[0], -1, -1)
        q = q + self.attn(q, memory, memory)[0]
        masks = torch.einsum("bqc,bchw->bqhw", self.mask_head(q), mask_feats)
        return self.class_head(q), masks


def hungarian(cls_logits, masks, gt_cls, gt_masks):
    # small problem: exhaustive search over query assignments
    with torch.no_grad():
        prob = cls_logits.softmax(-1)
        cost = -prob[:, gt_cls] + F.binary_cross_entropy_with_logits(
            masks.unsqueeze(1).expand(-1, len(gt_cls), -1, -1),
            gt_masks.unsqueeze(0).expand(masks.shape[0], -1, -1, -1), reduction="none").mean((2, 3))
        best = min(itertools.permutations(range(masks.shape[0]), len(gt_cls)),
                   key=lambda p: sum(cost[q, j].item() for j, q in enumerate(p)))
    return torch.tensor(best)


def panoptic_loss(cls_logits, masks, targets):
    total = 0.0
    for b, (gt_cls, gt_masks) in enumerate(targets):
        idx = hungarian(cls_logits[b], masks[b], gt_cls, gt_masks)
        labels = torch.full((NUM_QUERIES,), NUM_CLASSES)
        labels[idx] = gt_cls
        weight = torch.ones(NUM_CLASSES + 1)
        weight[-1] = 0.1
        total = total + F.cross_entropy(cls_logits[b], labels, weight=weight)
        total = total + F.binary_cross_entropy_with_logits(masks[b, idx], gt_masks)
    return total / len(targets)


def make_batch(bs=2, size=16):
    imgs = torch.randn(bs, 3, size, size)
    targets = []
    for _ in range(bs):
        seg = torch.randint(0, 3, (size // 2, size // 2))
        gt_cls = torch.randperm(NUM_CLASSES)[:3]
        targets.append((gt_cls, torch.stack([(seg == k).float() for k in range(3)])))
    return imgs, targets


model = MaskClassifier()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)

for step in range(4):
    imgs, targets = make_batch()
    cls_logits, masks = model(imgs)
    loss = panoptic_loss(cls_logits, masks, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
