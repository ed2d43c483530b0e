"""Point-cloud registration: a correspondence network (shared point features, soft matching), an
inlier-weight head, weighted SVD (Kabsch) alignment, and two rounds of iterative refinement.

Report: https://github.com/MIT-REALM/neural_clbf/pull/10 ("Fixing Inplace Error that Made Weird
Autograd Errors"). In the controller's training losses a hinge violation was computed with
``F.relu(...)`` and then masked in place (``violation *= condition_active``), and running totals were
built with ``+=``; backward failed with "one of the variables needed for gradient computation has been
modified by an inplace operation". The maintainer had taken ``*=`` for sugar for ``x = x * y``; the
PR rewrote the lines out of place.

The training setting is the writer's: a correspondence hinge on the matched points' distance to their
ground-truth partners, masked in place so that outlier points do not count. ``relu`` saved its output
for the backward, and ``*=`` overwrote it.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_POINTS = 32
BATCH = 4
OUTLIER_FRAC = 0.25
MARGIN = 0.05
ITERS = 2
STEPS = 6


def random_rotation(batch, max_angle=0.6):
    axis = F.normalize(torch.randn(batch, 3), dim=1)
    angle = max_angle * torch.rand(batch, 1, 1)
    k = torch.zeros(batch, 3, 3)
    k[:, 0, 1], k[:, 0, 2], k[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    k = k - k.transpose(1, 2)
    eye = torch.eye(3).expand(batch, 3, 3)
    return eye + torch.sin(angle) * k + (1 - torch.cos(angle)) * (k @ k)


def make_pairs(batch):
    """Source cloud, rigidly moved and permuted target with some points replaced by outliers."""
    src = torch.rand(batch, N_POINTS, 3) - 0.5
    rot, trans = random_rotation(batch), 0.3 * torch.randn(batch, 1, 3)
    tgt_clean = src @ rot.transpose(1, 2) + trans
    inlier = (torch.rand(batch, N_POINTS) > OUTLIER_FRAC).float()
    tgt_clean = torch.where(inlier.bool().unsqueeze(-1), tgt_clean, torch.rand(batch, N_POINTS, 3) - 0.5)
    perm = torch.stack([torch.randperm(N_POINTS) for _ in range(batch)])
    tgt = torch.gather(tgt_clean, 1, perm.unsqueeze(-1).expand(-1, -1, 3))
    tgt = tgt + 0.005 * torch.randn_like(tgt)
    gt_match = src @ rot.transpose(1, 2) + trans  # where each source point should land
    return src, tgt, rot, trans, inlier, gt_match


class PointFeatures(nn.Module):
    """PointNet-style per-point features with the global max-pooled code appended."""

    def __init__(self, dim=32):
        super().__init__()
        self.local = nn.Sequential(nn.Linear(3, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.mix = nn.Linear(2 * dim, dim)

    def forward(self, pts):
        f = self.local(pts - pts.mean(dim=1, keepdim=True))
        g = f.max(dim=1, keepdim=True).values.expand_as(f)
        return self.mix(torch.cat([f, g], dim=-1))


class InlierHead(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * dim + 1, dim), nn.ReLU(), nn.Linear(dim, 1))

    def forward(self, f_src, f_match, residual):
        return torch.sigmoid(self.net(torch.cat([f_src, f_match, residual], dim=-1))).squeeze(-1)


def weighted_kabsch(a, b, w):
    """Rotation and translation minimising sum_i w_i |R a_i + t - b_i|^2."""
    w = w / w.sum(dim=1, keepdim=True).clamp_min(1e-6)
    ca = (w.unsqueeze(-1) * a).sum(dim=1, keepdim=True)
    cb = (w.unsqueeze(-1) * b).sum(dim=1, keepdim=True)
    cov = (a - ca).transpose(1, 2) @ (w.unsqueeze(-1) * (b - cb))
    u, _, vh = torch.linalg.svd(cov)
    d = torch.sign(torch.det(vh.transpose(1, 2) @ u.transpose(1, 2)))
    fix = torch.diag_embed(torch.stack([torch.ones_like(d), torch.ones_like(d), d], dim=-1))
    rot = vh.transpose(1, 2) @ fix @ u.transpose(1, 2)
    return rot, cb - ca @ rot.transpose(1, 2)


def register(src, tgt):
    rot = torch.eye(3).expand(src.shape[0], 3, 3)
    trans = torch.zeros(src.shape[0], 1, 3)
    for _ in range(ITERS):
        moved = src @ rot.transpose(1, 2) + trans
        f_src, f_tgt = feat_net(moved), feat_net(tgt)
        attn = torch.softmax(f_src @ f_tgt.transpose(1, 2) / math.sqrt(f_src.shape[-1]), dim=-1)
        matched = attn @ tgt
        residual = (matched - moved).norm(dim=-1, keepdim=True)
        w = weight_net(f_src, attn @ f_tgt, residual)
        rot, trans = weighted_kabsch(src, matched, w)
    return rot, trans, matched, w


def correspondence_hinge(matched, gt_match, inlier):
    violation = F.relu((matched - gt_match).norm(dim=-1) - MARGIN)
    violation *= inlier  # outliers have no ground-truth partner
    return violation.sum() / inlier.sum().clamp_min(1.0)


feat_net = PointFeatures()
weight_net = InlierHead()
feat_opt = torch.optim.Adam(feat_net.parameters(), lr=1e-3)
weight_opt = torch.optim.Adam(weight_net.parameters(), lr=1e-3)

for step in range(STEPS):
    src, tgt, rot_gt, trans_gt, inlier, gt_match = make_pairs(BATCH)
    rot, trans, matched, w = register(src, tgt)

    pose_loss = ((rot - rot_gt) ** 2).sum(dim=(1, 2)).mean() + ((trans - trans_gt) ** 2).sum(dim=-1).mean()
    corr_loss = correspondence_hinge(matched, gt_match, inlier)
    inlier_loss = F.binary_cross_entropy(w, inlier)

    feat_opt.zero_grad()
    weight_opt.zero_grad()
    (pose_loss + corr_loss + 0.1 * inlier_loss).backward()
    feat_opt.step()
    weight_opt.step()
    print(f"step {step}: pose {pose_loss.item():.4f} corr {corr_loss.item():.4f} inlier {inlier_loss.item():.4f}")
