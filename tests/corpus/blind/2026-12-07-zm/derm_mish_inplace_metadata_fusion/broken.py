"""Dermatology lesion classifier: a small Mish CNN on dermoscopy crops fused with patient metadata.

Reduced from rwightman/gen-efficientnet-pytorch issue #16,
https://github.com/rwightman/gen-efficientnet-pytorch/issues/16 : the author of the EfficientNet
port first wrote Mish "to be smart and make it a little more efficient with the inplace
variation", ``x.mul_(F.softplus(x).tanh())``, and it "triggered an inplace gradient error
(during training)"; the line was left commented out and the out-of-place ``x * ...tanh()`` kept.
Here a practitioner copies that in-place Mish into the conv blocks of a skin-lesion classifier
whose image features are fused with age, sex and anatomical site (ISIC-style metadata); the
training setting is the writer's. softplus saves its input for backward and the ``mul_``
overwrites that very input, so the first ``loss.backward()`` fails.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CLASSES = 4          # nevus, melanoma, BCC, benign keratosis
N_SITES = 6            # head/neck, trunk, upper limb, lower limb, palms/soles, oral/genital
IMG = 32


class Mish(nn.Module):
    """x * tanh(softplus(x)), written in place to save activation memory."""

    def forward(self, x):
        return x.mul_(F.softplus(x).tanh())


class ConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = Mish()

    def forward(self, x):
        return F.max_pool2d(self.act(self.bn(self.conv(x))), 2)


class LesionImageEncoder(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.blocks = nn.Sequential(ConvBlock(3, width), ConvBlock(width, 2 * width), ConvBlock(2 * width, 4 * width))
        self.out_dim = 4 * width

    def forward(self, x):
        return self.blocks(x).mean(dim=(2, 3))


class MetadataEncoder(nn.Module):
    """age (scaled), sex, one-hot anatomical site -> embedding."""

    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(2 + N_SITES, dim)
        self.act = Mish()
        self.out_dim = dim

    def forward(self, meta):
        return self.act(self.fc(meta))


class MetaFusionNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.image_encoder = LesionImageEncoder()
        self.meta_encoder = MetadataEncoder()
        fused = self.image_encoder.out_dim + self.meta_encoder.out_dim
        self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(fused, N_CLASSES))

    def forward(self, img, meta):
        return self.head(torch.cat([self.image_encoder(img), self.meta_encoder(meta)], dim=1))


def make_batch(n):
    img = torch.rand(n, 3, IMG, IMG)
    age = torch.rand(n, 1)                       # age / 90
    sex = torch.randint(0, 2, (n, 1)).float()
    site = F.one_hot(torch.randint(0, N_SITES, (n,)), N_SITES).float()
    label = torch.randint(0, N_CLASSES, (n,))
    return img, torch.cat([age, sex, site], dim=1), label


def class_weights(labels):
    counts = torch.bincount(labels, minlength=N_CLASSES).float().clamp(min=1)
    return counts.sum() / (N_CLASSES * counts)


train_set = [make_batch(8) for _ in range(6)]
weights = class_weights(torch.cat([b[2] for b in train_set]))

model = MetaFusionNet()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=1e-4)
criterion = nn.CrossEntropyLoss(weight=weights, label_smoothing=0.05)

for epoch in range(2):
    model.train()
    running = 0.0
    for img, meta, label in train_set:
        optimizer.zero_grad()
        logits = model(img, meta)
        loss = criterion(logits, label)
        loss.backward()
        optimizer.step()
        running += loss.item()
    print(f"epoch {epoch}: loss {running / len(train_set):.4f}")
