"""Dental panoramic X-ray tooth segmentation by quadrant: a U-Net with deep-supervision heads.

Reduced from pytorch/pytorch issue #1288, https://github.com/pytorch/pytorch/issues/1288
("Forgetting `retain_variables=True` causes segfault in conv2d"): one forward through a conv
layer, then ``o1.sum().backward()`` called a second time on the same graph; CPU builds raise
"Trying to backward through the graph a second time". The training setting is the writer's: a
tooth-segmentation U-Net (background + four dental quadrants, the first step of FDI tooth
numbering) with a main head and two deep-supervision heads, where the writer calls ``backward()``
once per head inside the loop over heads "to free each head's activations early". All heads
share the encoder, so the second head's backward walks encoder convolutions whose saved tensors
the first backward already freed.

Corrected: the weighted head losses summed and one ``backward()`` taken on the total (the same
gradient the per-head calls meant to accumulate).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CLASSES = 5            # background, upper-right, upper-left, lower-left, lower-right teeth
H, W = 32, 64            # panoramic patches are wide


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.InstanceNorm2d(cout, affine=True), nn.LeakyReLU(0.1),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.InstanceNorm2d(cout, affine=True), nn.LeakyReLU(0.1))


class ToothUNet(nn.Module):
    def __init__(self, w=8):
        super().__init__()
        self.enc1, self.enc2, self.enc3 = conv_block(1, w), conv_block(w, 2 * w), conv_block(2 * w, 4 * w)
        self.up2, self.dec2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, 2), conv_block(4 * w, 2 * w)
        self.up1, self.dec1 = nn.ConvTranspose2d(2 * w, w, 2, 2), conv_block(2 * w, w)
        self.head = nn.Conv2d(w, N_CLASSES, 1)
        self.ds_head2 = nn.Conv2d(2 * w, N_CLASSES, 1)
        self.ds_head3 = nn.Conv2d(4 * w, N_CLASSES, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        e3 = self.enc3(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(e3), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return [self.head(d1), self.ds_head2(d2), self.ds_head3(e3)]


def multiclass_dice_loss(logits, target, eps=1.0):
    prob = logits.softmax(1)
    onehot = F.one_hot(target, N_CLASSES).permute(0, 3, 1, 2).float()
    inter = (prob * onehot).sum((0, 2, 3))
    denom = prob.sum((0, 2, 3)) + onehot.sum((0, 2, 3))
    return 1 - ((2 * inter + eps) / (denom + eps))[1:].mean()


def head_loss(logits, target):
    """CE + Dice against the label map downsampled (nearest) to the head's resolution."""
    t = F.interpolate(target[:, None].float(), size=logits.shape[-2:], mode="nearest")[:, 0].long()
    return F.cross_entropy(logits, t) + multiclass_dice_loss(logits, t)


def synthetic_panoramic(n):
    """Dark jaw background with bright elliptical 'teeth' in two arches; label = quadrant of the tooth."""
    yy, xx = torch.meshgrid(torch.arange(H).float(), torch.arange(W).float(), indexing="ij")
    imgs, labels = [], []
    for _ in range(n):
        label = torch.zeros(H, W, dtype=torch.long)
        for row, upper in ((H * 0.3, True), (H * 0.7, False)):
            for cx in torch.linspace(6, W - 6, 8):
                cy = row + torch.randn(()) * 0.8
                inside = ((xx - cx) / 3.0) ** 2 + ((yy - cy) / 4.5) ** 2 < 1
                right = bool(cx < W / 2)
                quadrant = (1 if right else 2) if upper else (4 if right else 3)
                label[inside] = quadrant
        imgs.append(0.2 + 0.6 * (label > 0).float() + 0.08 * torch.randn(H, W))
        labels.append(label)
    return torch.stack(imgs)[:, None], torch.stack(labels)


train_set = [synthetic_panoramic(4) for _ in range(4)]
model = ToothUNet()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9, nesterov=True)
ds_weights = [1.0, 0.5, 0.25]

for epoch in range(2):
    for img, label in train_set:
        optimizer.zero_grad()
        outputs = model(img)
        per_head = [w * head_loss(logits, label) for w, logits in zip(ds_weights, outputs)]
        loss = sum(per_head)
        loss.backward()                        # one backward through the shared encoder
        head_losses = [l.item() for l in per_head]
        optimizer.step()
    print(f"epoch {epoch}: " + " ".join(f"{l:.3f}" for l in head_losses))
