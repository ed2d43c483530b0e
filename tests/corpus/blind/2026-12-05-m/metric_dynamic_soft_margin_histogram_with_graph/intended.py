"""Local patch descriptor learning (HardNet-style) with a CDF-based dynamic soft margin loss.

Reduced from https://github.com/KevinMusgrave/pytorch-metric-learning/issues/731: the author trains a
small convolutional descriptor on matching patch pairs with `DynamicSoftMarginLoss` (Zhang et al., ICCV
2019), whose running histogram of `d_pos - d_neg` (momentum-updated each batch) weighs the loss by its
CDF. The loss class is written out here as the library has it (L2 distance on normalised embeddings,
the "no labels" branch: anchors and positives in matching rows, the matching pair kept out of the
negatives). Synthetic 16x16 patches.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class LpDistance:
    def __init__(self, p=2, normalize_embeddings=True):
        self.p = p
        self.normalize_embeddings = normalize_embeddings

    def __call__(self, query, ref):
        if self.normalize_embeddings:
            query = F.normalize(query, p=2, dim=1)
            ref = F.normalize(ref, p=2, dim=1)
        return torch.cdist(query, ref, p=self.p)


class DynamicSoftMarginLoss(nn.Module):
    """Loss with a dynamical margin parameter (CDF of a running histogram of d_pos - d_neg)."""

    def __init__(self, min_val=-2.0, num_bins=10, momentum=0.01):
        super().__init__()
        self.distance = LpDistance(p=2, normalize_embeddings=True)
        self.min_val = min_val
        self.num_bins = int(num_bins)
        self.delta = 2 * abs(min_val) / num_bins
        self.momentum = momentum
        self.hist_ = torch.zeros((num_bins,))

    def forward(self, embeddings, ref_emb):
        loss = self.compute_loss_without_labels(embeddings, ref_emb)
        self.update_histogram(loss.detach())
        loss = self.weigh_loss(loss)
        return loss.mean()

    def compute_loss_without_labels(self, embeddings, ref_emb):
        mat = self.distance(embeddings, ref_emb)
        r, c = mat.size()

        min_a, min_p = torch.zeros(max(r, c)), torch.zeros(max(r, c))
        mat_neg = mat + torch.eye(r, c) * 10.0  # exclude the matching pairs from the negatives
        min_a[:c], _ = torch.min(mat_neg, dim=0)
        min_p[:r], _ = torch.min(mat_neg, dim=1)

        d_pos = torch.zeros(max(r, c))
        d_pos[: min(r, c)], d_neg = mat.diag(), torch.min(min_a, min_p)
        return d_pos - d_neg

    def update_histogram(self, data):
        idx = torch.floor((data - self.min_val) / self.delta).to(dtype=torch.long)
        alpha = torch.frac((data - self.min_val) / self.delta)
        momentum = self.momentum if self.hist_.sum() != 0 else 1.0
        self.hist_ = torch.scatter_add((1.0 - momentum) * self.hist_, 0, idx, momentum * (1 - alpha))
        self.hist_ = torch.scatter_add(self.hist_, 0, (idx + 1).clamp(max=self.num_bins - 1), momentum * alpha)
        self.hist_ /= self.hist_.sum()

    def weigh_loss(self, data):
        CDF = torch.cumsum(self.hist_, 0)
        idx = torch.floor((data - self.min_val) / self.delta).to(dtype=torch.long)
        return CDF[idx] * data


class HardNetSmall(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1, bias=False),
            nn.BatchNorm2d(16, affine=False),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(32, affine=False),
            nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(32, affine=False),
            nn.ReLU(),
            nn.Conv2d(32, dim, 4, bias=False),
        )

    @staticmethod
    def input_norm(x):
        flat = x.view(x.size(0), -1)
        mp = flat.mean(dim=1)
        sp = flat.std(dim=1) + 1e-7
        return (x - mp[:, None, None, None]) / sp[:, None, None, None]

    def forward(self, x):
        x = self.features(self.input_norm(x))
        return F.normalize(x.view(x.size(0), -1), p=2, dim=1)


def make_patch_pairs(n_points=256, size=16):
    """Each 3-D point seen twice: a base patch and a photometrically/geometrically jittered copy."""
    base = F.avg_pool2d(torch.rand(n_points, 1, size + 2, size + 2), 3, 1)
    shifted = torch.roll(base, shifts=(1, 0), dims=(2, 3))
    positive = 0.8 * shifted + 0.1 + 0.05 * torch.randn_like(base)
    return base, positive


def train(model, loss_fn, optimizer, patches_a, patches_p, epochs=2, batch_size=32):
    model.train()
    n = patches_a.size(0)
    for epoch in range(epochs):
        perm = torch.randperm(n)
        for i in range(0, n, batch_size):
            idx = perm[i : i + batch_size]
            data_a, data_p = patches_a[idx], patches_p[idx]

            out_a = model(data_a)
            out_p = model(data_p)
            loss = loss_fn(out_a, out_p)

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} batch {i // batch_size} loss {loss.item():.4f}")


def main():
    patches_a, patches_p = make_patch_pairs()
    model = HardNetSmall()
    loss_fn = DynamicSoftMarginLoss(min_val=-2.0, num_bins=10, momentum=0.01)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    train(model, loss_fn, optimizer, patches_a, patches_p)


if __name__ == "__main__":
    main()
