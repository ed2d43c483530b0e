"""Crowd counting: density-map regression plus a ranking loss on nested crops of unlabeled images: corrected.

As broken.py, with the rank loss reduced to a scalar over the batch (the mean of the per-image
hinges), so that each ``backward(retain_graph=...)`` of the report's loop gets a scalar.

Reduced from https://github.com/dillondavis/RecurrentAttentionConvolutionalNeuralNetwork/issues/4.
In that RA-CNN reimplementation a ``RankLoss`` module compared two scales, returned
``torch.clamp(ps1 - ps2 + margin, min=0)`` with no reduction, and the training manager called
``.backward(retain_graph=...)`` on it once per pair of scales. With a batch of one image the hinge
had a single element and the backward ran; with ``batch_size=32`` it failed with "grad can be
implicitly created only for scalar outputs". The reporter rewrote ``RankLoss`` to gather each
image's own probability; a per-image hinge still has to be reduced over the batch before
``backward()``.

The training setting is the writer's: a multi-column density network (MCNN-style columns with
small, medium and large kernels) trained with an MSE loss on labeled density maps, and, on
unlabeled images, the self-supervised ranking constraint of Liu et al. (2018): a crop nested in a
larger crop cannot contain more people, so the hinge ``count(inner) - count(outer) + margin`` is
penalised for every pair of nested crops, one ``backward(retain_graph=...)`` per pair as in the
report. In broken.py the rank loss module was written as the report's, unreduced.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

IMG = 24
LABELED_BATCH = 4
UNLABELED_BATCH = 4
N_LEVELS = 3  # nested crops: full image, 3/4, 1/2


def make_labeled(n):
    """Images with blobs at head positions and the matching Gaussian density maps."""
    imgs = 0.1 * torch.randn(n, 1, IMG, IMG)
    dens = torch.zeros(n, 1, IMG, IMG)
    yy, xx = torch.meshgrid(torch.arange(IMG).float(), torch.arange(IMG).float(), indexing="ij")
    for i in range(n):
        for _ in range(int(torch.randint(3, 12, (1,)))):
            cy, cx = torch.randint(2, IMG - 2, (2,)).float()
            g = torch.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * 1.5 ** 2))
            imgs[i, 0] += g
            dens[i, 0] += g / g.sum()
    return imgs, dens


class Column(nn.Module):
    def __init__(self, k, ch):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, ch, k, padding=k // 2), nn.ReLU(),
            nn.Conv2d(ch, ch, k, padding=k // 2), nn.ReLU(),
            nn.Conv2d(ch, ch // 2, k, padding=k // 2), nn.ReLU(),
        )

    def forward(self, x):
        return self.body(x)


class MCNN(nn.Module):
    """Three columns with different receptive fields, fused by a 1x1 convolution."""

    def __init__(self):
        super().__init__()
        self.columns = nn.ModuleList([Column(7, 6), Column(5, 8), Column(3, 10)])
        self.fuse = nn.Conv2d(3 + 4 + 5, 1, 1)

    def forward(self, x):
        return self.fuse(torch.cat([c(x) for c in self.columns], 1))


class RankLoss(nn.Module):
    """Hinge on two counts: the inner crop should not count more than the outer one."""

    def __init__(self, margin):
        super().__init__()
        self.margin = margin

    def forward(self, count_inner, count_outer):
        return torch.clamp(count_inner - count_outer + self.margin, min=0).mean()


def nested_crops(imgs, n_levels):
    """Centred crops, each inside the previous one, resized back to the input size."""
    crops = []
    for level in range(n_levels):
        side = int(IMG * (1.0 - 0.25 * level))
        off = (IMG - side) // 2
        crop = imgs[:, :, off:off + side, off:off + side]
        crops.append(F.interpolate(crop, size=(IMG, IMG), mode="bilinear", align_corners=False))
    return crops


lab_imgs, lab_dens = make_labeled(16)
unlab_imgs, _ = make_labeled(16)

net = MCNN()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
criterion_density = nn.MSELoss()
criterion_rank = RankLoss(margin=0.0)
RANK_WEIGHT = 0.1

for it in range(5):
    li = torch.randint(0, 16, (LABELED_BATCH,))
    ui = torch.randint(0, 16, (UNLABELED_BATCH,))
    optimizer.zero_grad()

    pred = net(lab_imgs[li])
    density_loss = criterion_density(pred * 100.0, lab_dens[li] * 100.0)
    density_loss.backward()

    crops = nested_crops(unlab_imgs[ui], N_LEVELS)
    counts = [net(c).sum(dim=(1, 2, 3)) for c in crops]  # one count per image and level
    for level in range(N_LEVELS - 1, 0, -1):
        retain_graph = (level - 1) > 0
        rank_loss = RANK_WEIGHT * criterion_rank(counts[level], counts[level - 1])
        rank_loss.backward(retain_graph=retain_graph)

    optimizer.step()
    if it % 2 == 0:
        mae = (pred.sum(dim=(1, 2, 3)) - lab_dens[li].sum(dim=(1, 2, 3))).abs().mean().item()
        print(f"iter {it}: density {density_loss.item():.4f}  count MAE {mae:.2f}")
