"""Reduced from https://github.com/torch-points3d/torch-points3d/issues/552

The author ran a backward pass through a KPConv point-cloud model whose input positions require
grad and got "one of the variables needed for gradient computation has been modified by an
inplace operation: [torch.LongTensor [3, 25, 3]] is at version 2; expected version 1". The same
error stopped the PointAugment port in torch-points3d PR #264, where a learned augmentor moves
the points before the KPConv classifier, so the classifier's loss reaches the positions. The
cause: KPConv_ops calls gather() twice with the same neighbors_indices (once for the neighbour
positions, once for the neighbour features), and gather() first fills the shadow neighbours in
place (idx[idx == -1] = ...) before x.gather(0, idx), which saved (a view of) idx. The reporter's
fix, which the thread accepted: gather with idx.clone().

Here a PointAugment-style trainer: an augmentor (per-cloud scaling and per-point displacement)
is stepped to make the classifier's loss larger, and a small KPConv classifier is stepped on the
augmented clouds.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_POINTS, K_NEIGHBORS, RADIUS, N_CLASSES = 48, 8, 0.6, 4


def gather(x, idx):
    """x[idx] with shape [n_points, n_neighbors, D] (torch-points3d's gather, method 2)."""
    idx[idx == -1] = x.shape[0] - 1  # Shadow point
    for i, ni in enumerate(idx.size()[1:]):
        x = x.unsqueeze(i + 1)
        new_s = list(x.size())
        new_s[i + 1] = ni
        x = x.expand(new_s)
    n = len(idx.size())
    for i, di in enumerate(x.size()[n:]):
        idx = idx.unsqueeze(i + n)
        new_s = list(idx.size())
        new_s[i + n] = di
        idx = idx.expand(new_s)
    return x.gather(0, idx)


def radius_neighbors(pos, batch, k=K_NEIGHBORS, radius=RADIUS):
    """Indices of the k nearest points of the same cloud within radius, -1 where there are fewer."""
    with torch.no_grad():
        d = torch.cdist(pos, pos)
        d[batch[:, None] != batch[None, :]] = float("inf")
        dist, idx = d.topk(k, largest=False)
        idx[dist > radius] = -1
    return idx


class KPConv(nn.Module):
    def __init__(self, in_dim, out_dim, n_kernel_points=5, extent=0.4):
        super().__init__()
        angles = torch.linspace(0, 2 * math.pi, n_kernel_points)[:-1]
        kp = torch.stack([0.3 * torch.cos(angles), 0.3 * torch.sin(angles), torch.zeros_like(angles)], 1)
        self.register_buffer("K_points", torch.cat([torch.zeros(1, 3), kp]))
        self.K_values = nn.Parameter(torch.randn(n_kernel_points, in_dim, out_dim) / math.sqrt(in_dim))
        self.extent = extent

    def forward(self, query_points, support_points, neighbors_indices, features):
        shadow_point = torch.ones_like(support_points[:1, :]) * 1e6
        support_points = torch.cat([support_points, shadow_point], dim=0)
        neighbors = gather(support_points, neighbors_indices)
        neighbors = neighbors - query_points.unsqueeze(1)
        differences = neighbors.unsqueeze(2) - self.K_points
        sq_distances = torch.sum(differences ** 2, dim=3)
        all_weights = torch.clamp(1 - torch.sqrt(sq_distances + 1e-12) / self.extent, min=0.0)
        all_weights = all_weights.transpose(2, 1)
        features = torch.cat([features, torch.zeros_like(features[:1, :])], dim=0)
        neighborhood_features = gather(features, neighbors_indices)
        weighted_features = torch.matmul(all_weights, neighborhood_features)
        weighted_features = weighted_features.permute(1, 0, 2)
        kernel_outputs = torch.matmul(weighted_features, self.K_values)
        return torch.sum(kernel_outputs, dim=0)


class KPClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = KPConv(1, 16)
        self.bn1 = nn.BatchNorm1d(16)
        self.conv2 = KPConv(16, 32)
        self.bn2 = nn.BatchNorm1d(32)
        self.head = nn.Linear(32, N_CLASSES)

    def forward(self, pos, batch, n_clouds):
        neighbors = radius_neighbors(pos, batch)
        ones = torch.ones(pos.shape[0], 1)
        x = F.leaky_relu(self.bn1(self.conv1(pos, pos, neighbors, ones)), 0.1)
        x = F.leaky_relu(self.bn2(self.conv2(pos, pos, neighbors, x)), 0.1)
        pooled = torch.zeros(n_clouds, x.shape[1]).index_add(0, batch, x) / N_POINTS
        return self.head(pooled)


class Augmentor(nn.Module):
    """Per-cloud scaling and per-point displacement, from the points and a noise vector."""

    def __init__(self, noise_dim=8):
        super().__init__()
        self.noise_dim = noise_dim
        self.point_mlp = nn.Sequential(nn.Linear(3 + noise_dim, 32), nn.ReLU(), nn.Linear(32, 3))
        self.scale_mlp = nn.Sequential(nn.Linear(3 + noise_dim, 16), nn.ReLU(), nn.Linear(16, 3))

    def forward(self, pos, batch, n_clouds):
        noise = torch.randn(n_clouds, self.noise_dim)[batch]
        h = torch.cat([pos, noise], 1)
        scale = 1.0 + 0.2 * torch.tanh(self.scale_mlp(h))
        return pos * scale + 0.05 * torch.tanh(self.point_mlp(h))


def make_clouds(n_clouds, n_points=N_POINTS):
    labels = torch.randint(0, N_CLASSES, (n_clouds,))
    pos = torch.randn(n_clouds, n_points, 3) * 0.5
    pos[..., 2] *= (labels[:, None].float() + 1) / N_CLASSES  # flatter or taller by class
    batch = torch.arange(n_clouds).repeat_interleave(n_points)
    return pos.reshape(-1, 3), batch, labels


class PointAugmentTrainer:
    def __init__(self):
        self.augmentor = Augmentor()
        self.classifier = KPClassifier()
        self.opt_aug = torch.optim.Adam(self.augmentor.parameters(), lr=1e-3)
        self.opt_cls = torch.optim.Adam(self.classifier.parameters(), lr=1e-3)

    def train_step(self, pos, batch, labels):
        n_clouds = labels.shape[0]
        aug_pos = self.augmentor(pos, batch, n_clouds)

        # augmentor: make the augmented cloud harder, but not much harder than the original
        self.opt_aug.zero_grad()
        with torch.no_grad():
            loss_orig = F.cross_entropy(self.classifier(pos, batch, n_clouds), labels)
        loss_aug = F.cross_entropy(self.classifier(aug_pos, batch, n_clouds), labels)
        aug_loss = torch.abs(1.0 - torch.exp(loss_aug - 1.5 * loss_orig))
        aug_loss.backward()
        self.opt_aug.step()

        # classifier: learn from the original and the augmented cloud
        self.opt_cls.zero_grad()
        logits = self.classifier(torch.cat([pos, aug_pos.detach()]),
                                 torch.cat([batch, batch + n_clouds]), 2 * n_clouds)
        cls_loss = F.cross_entropy(logits, torch.cat([labels, labels]))
        cls_loss.backward()
        self.opt_cls.step()
        return aug_loss.item(), cls_loss.item()


trainer = PointAugmentTrainer()
for epoch in range(3):
    for it in range(2):
        pos, batch, labels = make_clouds(4)
        aug_l, cls_l = trainer.train_step(pos, batch, labels)
    print(epoch, aug_l, cls_l)
