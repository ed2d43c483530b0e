"""PointPillars with an anchor head and a multi-layer query refinement stage.

Source: https://github.com/NVlabs/FocalFormer3D/issues/25
The report: training FocalFormer3D's decoder failed with "one of the variables needed for
gradient computation has been modified by an inplace operation ... output 0 of
AsStridedBackward0" only when num_decoder_layers > 1. The culprit was
``query_feat += roi_feat`` in the decoder loop: the query features had been consumed by
the previous decoder layer, which saved them for its backward; the fix was
``query_feat = query_feat + roi_feat``. Here the author trains a PointPillars detector:
pillar features are scattered into a BEV pseudo-image, a small 2-D backbone and an anchor
head score anchors, and the top-scoring anchors become queries that two refinement
layers update with BEV features gathered at their current centres. The training setting
is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

GRID, N_PILLARS, PTS, FEAT, TOPK, N_REFINE, BATCH, STEPS = 16, 40, 8, 32, 6, 2, 2, 4


class PillarFeatureNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(7, FEAT, bias=False)
        self.norm = nn.BatchNorm1d(FEAT)

    def forward(self, points):  # (P, PTS, 7): x, y, z, r, offsets to the pillar mean
        x = self.linear(points)
        x = F.relu(self.norm(x.transpose(1, 2)).transpose(1, 2))
        return x.max(dim=1).values  # (P, FEAT)


def scatter_to_bev(pillar_feats, coords):
    canvas = pillar_feats.new_zeros(FEAT, GRID * GRID)
    canvas[:, coords[:, 0] * GRID + coords[:, 1]] = pillar_feats.t()
    return canvas.view(FEAT, GRID, GRID)


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(FEAT, FEAT, 3, padding=1), nn.BatchNorm2d(FEAT), nn.ReLU(),
                                   nn.Conv2d(FEAT, FEAT, 3, padding=1), nn.BatchNorm2d(FEAT), nn.ReLU())

    def forward(self, x):
        return self.block(x)


class AnchorHead(nn.Module):
    """One anchor per BEV cell: an objectness score and a (dx, dy, log w, log l) box delta."""

    def __init__(self):
        super().__init__()
        self.cls = nn.Conv2d(FEAT, 1, 1)
        self.box = nn.Conv2d(FEAT, 4, 1)

    def forward(self, bev):
        return self.cls(bev).flatten(2).squeeze(1), self.box(bev).flatten(2).transpose(1, 2)


class QueryRefiner(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Sequential(nn.Conv1d(FEAT, FEAT, 1), nn.ReLU(), nn.Conv1d(FEAT, 4, 1))
                                     for _ in range(N_REFINE)])

    def forward(self, bev, query_feat, centres):
        bev_flat = bev.flatten(2)  # (B, FEAT, GRID*GRID)
        boxes = []
        for layer in self.layers:
            cells = centres.detach().round().clamp(0, GRID - 1).long()
            index = (cells[..., 0] * GRID + cells[..., 1]).unsqueeze(1).expand(-1, FEAT, -1)
            roi_feat = bev_flat.gather(2, index)
            query_feat += roi_feat
            delta = layer(query_feat).transpose(1, 2)  # (B, K, 4)
            centres = centres + delta[..., :2]
            boxes.append(torch.cat([centres, delta[..., 2:]], dim=-1))
        return boxes


pfn = PillarFeatureNet()
backbone = Backbone()
head = AnchorHead()
refiner = QueryRefiner()
optimizer = torch.optim.AdamW([*pfn.parameters(), *backbone.parameters(), *head.parameters(),
                               *refiner.parameters()], lr=1e-3)
anchor_centres = torch.stack(torch.meshgrid(torch.arange(GRID), torch.arange(GRID), indexing="ij"), -1)
anchor_centres = anchor_centres.reshape(-1, 2).float()


def synthetic_scene():
    coords = torch.randperm(GRID * GRID)[:N_PILLARS]
    coords = torch.stack([coords // GRID, coords % GRID], dim=1)
    points = torch.randn(N_PILLARS, PTS, 7)
    objects = torch.rand(3, 2) * (GRID - 1)  # object centres in cell units
    box_size = torch.rand(3, 2).log()
    return coords, points, objects, box_size


for step in range(STEPS):
    bevs, cls_targets, reg_targets = [], [], []
    for _ in range(BATCH):
        coords, points, objects, box_size = synthetic_scene()
        bevs.append(scatter_to_bev(pfn(points), coords))
        dist = torch.cdist(anchor_centres, objects)  # (cells, objects)
        nearest = dist.argmin(1)
        cls_targets.append((dist.min(1).values < 1.0).float())
        reg_targets.append(torch.cat([objects[nearest] - anchor_centres, box_size[nearest]], dim=1))
    bev = backbone(torch.stack(bevs))
    cls_targets, reg_targets = torch.stack(cls_targets), torch.stack(reg_targets)

    scores, deltas = head(bev)
    loss_cls = F.binary_cross_entropy_with_logits(scores, cls_targets)
    pos = cls_targets.bool()
    loss_box = F.smooth_l1_loss(deltas[pos], reg_targets[pos]) if pos.any() else deltas.sum() * 0

    top = scores.topk(TOPK, dim=1).indices  # (B, K)
    query_feat = bev.flatten(2).gather(2, top.unsqueeze(1).expand(-1, FEAT, -1))
    centres = anchor_centres[top] + deltas.gather(1, top.unsqueeze(-1).expand(-1, -1, 4))[..., :2]
    target_boxes = reg_targets.gather(1, top.unsqueeze(-1).expand(-1, -1, 4)) + F.pad(anchor_centres[top], (0, 2))
    loss_refine = sum(F.l1_loss(b, target_boxes) for b in refiner(bev, query_feat, centres))

    loss = loss_cls + loss_box + 0.5 * loss_refine
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: cls {loss_cls.item():.4f} box {loss_box.item():.4f} refine {loss_refine.item():.4f}")
