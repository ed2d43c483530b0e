"""Automatic colorization in Lab space: classify each pixel's ab into quantised bins, class rebalancing.

Report: https://github.com/pytorch/pytorch/issues/114505 -- "An inplace operation involved in
torch.nn.functional.softplus": the author filled a tensor column by column, ``b[:, 0] = a[:, 0]`` then
``b[:, 1] = torch.nn.Softplus()(b[:, 0])``, and the backward failed with "one of the variables needed
for gradient computation has been modified by an inplace operation ... is at version 2; expected
version 1", while ``Softplus()(b[:, 0].clone())`` worked. The maintainer's answer: autograd keeps a
single version counter for the whole storage, so writing one region of a tensor invalidates a slice
of another region that an op saved for backward. The training setting is the writer's: the net reads
the L channel as a slice of the batch's Lab tensor, and the predicted (annealed-mean) ab is written
back into the same Lab tensor to convert it to RGB for a reconstruction term.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

H = W = 16
GRID = 0.2                                   # bin width on ab / 110
T_ANNEAL = 0.38                              # annealed-mean temperature
LAMBDA_MIX = 0.5                             # prior smoothing for the class rebalancing

centers_1d = torch.arange(-1.0, 1.0 + 1e-6, GRID)
AB_BINS = torch.cartesian_prod(centers_1d, centers_1d)        # (Q, 2), normalised ab
Q = AB_BINS.shape[0]

M_RGB2XYZ = torch.tensor([[0.412453, 0.357580, 0.180423],
                          [0.212671, 0.715160, 0.072169],
                          [0.019334, 0.119193, 0.950227]])
WHITE = torch.tensor([0.950456, 1.0, 1.088754])


def rgb_to_lab(rgb):
    lin = torch.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = torch.einsum("ij,bjhw->bihw", M_RGB2XYZ, lin) / WHITE.view(1, 3, 1, 1)
    f = torch.where(xyz > 0.008856, xyz.clamp(min=1e-8) ** (1 / 3), 7.787 * xyz + 16 / 116)
    L = 116 * f[:, 1:2] - 16
    a = 500 * (f[:, 0:1] - f[:, 1:2])
    b = 200 * (f[:, 1:2] - f[:, 2:3])
    return torch.cat([L / 50 - 1, a / 110, b / 110], dim=1)    # normalised Lab


def lab_to_rgb(lab):
    L, a, b = (lab[:, 0:1] + 1) * 50, lab[:, 1:2] * 110, lab[:, 2:3] * 110
    fy = (L + 16) / 116
    f = torch.cat([fy + a / 500, fy, fy - b / 200], dim=1)
    xyz = torch.where(f > 0.2069, f ** 3, (f - 16 / 116) / 7.787) * WHITE.view(1, 3, 1, 1)
    lin = torch.einsum("ij,bjhw->bihw", torch.linalg.inv(M_RGB2XYZ), xyz).clamp(1e-6, 1.0)
    return torch.where(lin > 0.0031308, 1.055 * lin ** (1 / 2.4) - 0.055, 12.92 * lin)


def make_images(n=64):
    """Smooth random colour fields: 4x4 random colours upsampled to 16x16."""
    low = torch.rand(n, 3, 4, 4)
    return F.interpolate(low, size=(H, W), mode="bilinear", align_corners=False)


def nearest_bin(ab):                          # (B, 2, H, W) -> (B, H, W) bin index
    flat = ab.permute(0, 2, 3, 1).reshape(-1, 2)
    return torch.cdist(flat, AB_BINS).argmin(dim=1).view(ab.shape[0], ab.shape[2], ab.shape[3])


class ColorizationNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, padding=2, dilation=2), nn.ReLU(),
            nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
        )
        self.classifier = nn.Conv2d(32, Q, 1)

    def forward(self, L):
        return self.classifier(self.body(L))  # (B, Q, H, W) logits over ab bins


def annealed_mean(logits):
    probs = F.softmax(logits / T_ANNEAL, dim=1)
    return torch.einsum("bqhw,qc->bchw", probs, AB_BINS)


rgb_all = make_images()
lab_all = rgb_to_lab(rgb_all)
prior = torch.bincount(nearest_bin(lab_all[:, 1:]).flatten(), minlength=Q).float()
prior = prior / prior.sum()
rebalance = 1.0 / ((1 - LAMBDA_MIX) * prior + LAMBDA_MIX / Q)
rebalance = rebalance / (prior * rebalance).sum()             # E_prior[w] = 1

model = ColorizationNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(3):
    permutation = torch.randperm(len(rgb_all))
    for start in range(0, len(rgb_all), 8):
        idx = permutation[start:start + 8]
        rgb, lab = rgb_all[idx], lab_all[idx]
        target = nearest_bin(lab[:, 1:])

        logits = model(lab[:, :1])
        ce = (F.cross_entropy(logits, target, reduction="none") * rebalance[target]).mean()

        lab[:, 1:] = annealed_mean(logits)
        rgb_pred = lab_to_rgb(lab)
        recon = F.l1_loss(rgb_pred, rgb)
        loss = ce + 0.5 * recon

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: rebalanced CE {ce.item():.3f}  RGB L1 {recon.item():.4f}")
