"""Shadow removal with a shadow-mask network and a lighting estimator, on synthetic shadow pairs.

Report: https://github.com/zhangyu2234/Deep-learning-by-hand (the "Problems" section of the
fully connected network notebook: "RuntimeError: Trying to backward through the graph a second
time"). The author generated a synthetic regression set as ``Y = X @ true_W + true_b`` with the
ground-truth ``true_W`` and ``true_b`` created with ``requires_grad=True``; every label batch sliced
from ``Y`` (``grad_fn=<SliceBackward0>``) still led back into that one generation graph, so the
first ``l.backward()`` freed it and the second mini-batch failed. The fix is to generate the data
from tensors that do not require grad. Here the training setting is the writer's: shadowed
images are synthesised once from clean textures, random soft shadow masks and a "true" per-channel
shadow attenuation and ambient tint written with ``requires_grad=True``; a mask network and a
lighting estimator are trained with two optimizers on mini-batches sliced from that set, with a
reconstruction loss, a mask loss and an illumination-consistency loss between the relit shadow
region and the lit region around it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N, H, W = 96, 24, 24


def smooth_noise(n, c, scale):
    x = torch.rand(n, c, H // scale, W // scale)
    return F.interpolate(x, size=(H, W), mode="bilinear", align_corners=False)


def random_masks(n):
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, H), torch.linspace(-1, 1, W), indexing="ij")
    cy, cx = torch.rand(n, 1, 1) * 1.2 - 0.6, torch.rand(n, 1, 1) * 1.2 - 0.6
    r = 0.3 + 0.3 * torch.rand(n, 1, 1)
    d = ((yy - cy) ** 2 + (xx - cx) ** 2).sqrt()
    return torch.sigmoid((r - d) * 12.0).unsqueeze(1)


# ground-truth shadow formation model
true_attenuation = torch.tensor([0.35, 0.40, 0.50], requires_grad=True).view(1, 3, 1, 1)
true_ambient = torch.tensor([0.02, 0.03, 0.06], requires_grad=True).view(1, 3, 1, 1)

clean = 0.3 + 0.6 * smooth_noise(N, 3, 4)
masks = random_masks(N)
shadowed = clean * (1 - masks * (1 - true_attenuation)) + masks * true_ambient


class MaskNet(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, ch, 3, padding=1), nn.ReLU(),
            nn.Conv2d(ch, ch, 3, padding=2, dilation=2), nn.ReLU(),
            nn.Conv2d(ch, 1, 3, padding=1),
        )

    def forward(self, img):
        return self.net(img)


class LightingEstimator(nn.Module):
    """Per-image, per-channel shadow attenuation and ambient term from the image and the mask."""

    def __init__(self, ch=16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(4, ch, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(ch, ch, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.head = nn.Linear(ch, 6)

    def forward(self, img, mask):
        out = self.head(self.features(torch.cat([img, mask], dim=1)))
        atten = torch.sigmoid(out[:, :3]).view(-1, 3, 1, 1)
        ambient = 0.1 * torch.sigmoid(out[:, 3:]).view(-1, 3, 1, 1)
        return atten, ambient


def relight(img, mask, atten, ambient):
    return (img - mask * ambient) / (1 - mask * (1 - atten)).clamp(min=1e-3)


def illumination_consistency(relit, mask):
    inside = (relit * mask).sum((2, 3)) / mask.sum((2, 3)).clamp(min=1e-3)
    ring = (F.max_pool2d(mask, 5, 1, 2) - mask).clamp(min=0)
    around = (relit * ring).sum((2, 3)) / ring.sum((2, 3)).clamp(min=1e-3)
    return F.l1_loss(inside, around)


mask_net = MaskNet()
light_net = LightingEstimator()
mask_opt = torch.optim.Adam(mask_net.parameters(), lr=2e-3)
light_opt = torch.optim.Adam(light_net.parameters(), lr=2e-3)

for epoch in range(4):
    perm = torch.randperm(N)
    for start in range(0, N, 16):
        idx = perm[start:start + 16]
        img, gt_mask, target = shadowed[idx], masks[idx], clean[idx]
        mask_logits = mask_net(img)
        mask = torch.sigmoid(mask_logits)
        atten, ambient = light_net(img, mask)
        relit = relight(img, mask, atten, ambient)
        loss = (F.l1_loss(relit, target)
                + 0.5 * F.binary_cross_entropy_with_logits(mask_logits, gt_mask)
                + 0.2 * illumination_consistency(relit, mask))
        mask_opt.zero_grad()
        light_opt.zero_grad()
        loss.backward()
        mask_opt.step()
        light_opt.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
