"""Retinal fundus vessel segmentation: a small U-Net with deep supervision, trained with BCE + clDice.

Reduced from dmitrysarov/clDice issue #3, https://github.com/dmitrysarov/clDice/issues/3 : the
user trained with the repository's ``soft_cldice_loss`` as written and got torch's "grad can be
implicitly created only for scalar outputs"; "the calculated loss value of cldice is not a scalar,
but a tensor with a shape of (4, 2)". The repository's ``dice_loss`` and ``soft_cldice_loss``
return one value per (batch, channel) by design. Here a vessel-segmentation U-Net on fundus
patches adds those per-(sample, channel) terms to a scalar BCE at every supervised scale, so the
total stays a (batch, channel) tensor when ``backward()`` is called.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

PATCH = 32


def soft_skeletonize(x, thresh_width=5):
    """Differentiable approximation of morphological skeletonisation (iterated soft erosion)."""
    for _ in range(thresh_width):
        min_pool_x = -F.max_pool2d(-x, 3, 1, 1)
        contour = F.relu(F.max_pool2d(min_pool_x, 3, 1, 1) - min_pool_x)
        x = F.relu(x - contour)
    return x


def norm_intersection(center_line, vessel, smooth=1.0):
    clf = center_line.flatten(2)
    vf = vessel.flatten(2)
    return ((clf * vf).sum(-1) + smooth) / (clf.sum(-1) + smooth)


def soft_cldice_loss(pred, target):
    """Per (batch, channel) clDice loss, as in the clDice helpers."""
    tprec = norm_intersection(soft_skeletonize(pred), target)
    tsens = norm_intersection(soft_skeletonize(target), pred)
    return -(2.0 * tprec * tsens) / (tprec + tsens)


def soft_dice_loss(pred, target, smooth=1.0):
    inter = (pred * target).flatten(2).sum(-1)
    return -(2.0 * inter + smooth) / (pred.flatten(2).sum(-1) + target.flatten(2).sum(-1) + smooth)


def conv_block(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
        nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
    )


class VesselUNet(nn.Module):
    def __init__(self, w=8):
        super().__init__()
        self.enc1, self.enc2, self.bott = conv_block(1, w), conv_block(w, 2 * w), conv_block(2 * w, 4 * w)
        self.up2, self.dec2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, 2), conv_block(4 * w, 2 * w)
        self.up1, self.dec1 = nn.ConvTranspose2d(2 * w, w, 2, 2), conv_block(2 * w, w)
        self.out = nn.Conv2d(w, 1, 1)
        self.side2 = nn.Conv2d(2 * w, 1, 1)     # deep supervision at 1/2 resolution
        self.side3 = nn.Conv2d(4 * w, 1, 1)     # deep supervision at 1/4 resolution

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        b = self.bott(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        size = x.shape[-2:]
        return [self.out(d1),
                F.interpolate(self.side2(d2), size=size, mode="bilinear", align_corners=False),
                F.interpolate(self.side3(b), size=size, mode="bilinear", align_corners=False)]


def synthetic_fundus_patch(n):
    """Green-channel patches with a few thin bright curvilinear 'vessels' and their masks."""
    yy, xx = torch.meshgrid(torch.arange(PATCH).float(), torch.arange(PATCH).float(), indexing="ij")
    imgs, masks = [], []
    for _ in range(n):
        mask = torch.zeros(PATCH, PATCH)
        for _ in range(3):
            a, b, c = torch.rand(3) * torch.tensor([0.05, 2.0, PATCH])
            curve = a * (xx - PATCH / 2) ** 2 / PATCH + b * (xx - PATCH / 2) + c
            mask = torch.maximum(mask, ((yy - curve).abs() < 1.0).float())
        imgs.append(0.3 + 0.5 * mask + 0.1 * torch.randn(PATCH, PATCH))
        masks.append(mask)
    return torch.stack(imgs).unsqueeze(1), torch.stack(masks).unsqueeze(1)


train_set = [synthetic_fundus_patch(4) for _ in range(4)]
model = VesselUNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
ds_weights = [1.0, 0.5, 0.25]
alpha = 0.5

for epoch in range(2):
    for img, mask in train_set:
        outputs = model(img)
        loss = 0
        for w, logits in zip(ds_weights, outputs):
            prob = torch.sigmoid(logits)
            loss = loss + w * (F.binary_cross_entropy_with_logits(logits, mask)
                               + (1 - alpha) * soft_dice_loss(prob, mask)
                               + alpha * soft_cldice_loss(prob, mask))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.mean().item():.4f}")
