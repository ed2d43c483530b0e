"""nnU-Net-style deep supervision: a decoder feature read by its auxiliary head, then changed with +=.

Report: https://discuss.pytorch.org/t/when-would-the-error-one-of-the-variables-needed-for-gradient-computation-has-been-modified-occur/11976
The author bifurcates the data flow: ``x = self.conv1(input)`` feeds a second branch
``x_p = self.conv1_p(x)`` and is then updated with ``x += some_layer``; backward fails with "one of
the variables needed for gradient computation has been modified by an inplace operation",
because the second branch saved ``x`` for its backward. The answer: ``x = x + some_layer``
creates a new tensor and leaves the saved one intact. The training setting is the writer's: a
small 2-D U-Net for organ segmentation whose decoder levels each feed a 1x1 deep-supervision head
before the level's skip projection is added to the feature, Dice plus cross-entropy at every
level against downsampled masks, nnU-Net's halving level weights and SGD with Nesterov momentum.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CLASSES, BATCH, SIZE = 3, 4, 32


def synthetic_batch(n):
    img = torch.randn(n, 1, SIZE, SIZE) * 0.3
    mask = torch.zeros(n, SIZE, SIZE, dtype=torch.long)
    yy, xx = torch.meshgrid(torch.arange(SIZE), torch.arange(SIZE), indexing="ij")
    for i in range(n):
        cy, cx, r = torch.randint(8, 24, (2,)).tolist() + [torch.randint(4, 8, (1,)).item()]
        organ = (yy - cy) ** 2 + (xx - cx) ** 2 < r ** 2
        lesion = (yy - cy) ** 2 + (xx - cx) ** 2 < (r // 2) ** 2
        mask[i][organ], mask[i][lesion] = 1, 2
        img[i, 0] += organ.float() + 0.5 * lesion.float()
    return img, mask


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.InstanceNorm2d(cout, affine=True), nn.LeakyReLU(0.01))


class DecoderLevel(nn.Module):
    def __init__(self, cin, cskip, cout):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cout, 2, stride=2)
        self.conv = nn.Conv2d(cout + cskip, cout, 3, padding=1)
        self.skip_proj = nn.Conv2d(cskip, cout, 1)
        self.norm = nn.InstanceNorm2d(cout, affine=True)
        self.ds_head = nn.Conv2d(cout, N_CLASSES, 1)

    def forward(self, x, skip):
        x = self.up(x)
        x = self.conv(torch.cat([x, skip], 1))
        aux = self.ds_head(x)
        x += self.skip_proj(skip)
        return F.leaky_relu(self.norm(x), 0.01), aux


class DSUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1, self.enc2, self.enc3 = conv_block(1, 8), conv_block(8, 16), conv_block(16, 32)
        self.dec2, self.dec1 = DecoderLevel(32, 16, 16), DecoderLevel(16, 8, 8)
        self.final = nn.Conv2d(8, N_CLASSES, 1)

    def forward(self, x):
        s1 = self.enc1(x)
        s2 = self.enc2(F.max_pool2d(s1, 2))
        b = self.enc3(F.max_pool2d(s2, 2))
        d2, aux2 = self.dec2(b, s2)
        d1, aux1 = self.dec1(d2, s1)
        return [self.final(d1), aux1, aux2]          # full resolution first


def dice_ce(logits, target):
    ce = F.cross_entropy(logits, target)
    probs = logits.softmax(1)
    onehot = F.one_hot(target, N_CLASSES).permute(0, 3, 1, 2).float()
    inter = (probs * onehot).sum((0, 2, 3))
    dice = (2 * inter + 1e-5) / (probs.sum((0, 2, 3)) + onehot.sum((0, 2, 3)) + 1e-5)
    return ce + (1 - dice[1:].mean())


def downsample_target(mask, size):
    return F.interpolate(mask[:, None].float(), size=size, mode="nearest")[:, 0].long()


model = DSUNet()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.99, nesterov=True, weight_decay=3e-5)
ds_weights = torch.tensor([1.0, 0.5, 0.25])
ds_weights = ds_weights / ds_weights.sum()

for it in range(5):
    img, mask = synthetic_batch(BATCH)
    outputs = model(img)
    loss = sum(w * dice_ce(out, downsample_target(mask, out.shape[-2:])) for w, out in zip(ds_weights, outputs))
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 12.0)
    optimizer.step()
    print(f"iter {it}: deep-supervision loss {loss.item():.4f}")
