"""Lane detection with RESA (recurrent feature-shift aggregator), pytorch-auto-drive layout.

Reduced from https://github.com/voldemortX/pytorch-auto-drive/issues/121 (see also #81):
the author trains RESA (ResNet backbone, BN+ReLU channel reducer, RESA feature shifts in
four directions, plain segmentation decoder and a lane-existence classifier) on CULane
with the repository's LaneLoss (weighted cross-entropy on the lane segmentation plus
0.1 x BCE on lane existence) and one SGD optimizer. Synthetic images and masks here.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_LANES = 4
H, W = 32, 64  # input size; features are H/8 x W/8


class TinyBackbone(nn.Module):
    """Stands in for the ResNet trunk: stride 8, 64 channels."""

    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
        )

    def forward(self, x):
        return self.layers(x)


class RESAReducer(nn.Module):
    # Reduce channel (typically to 128), with BN + ReLU
    def __init__(self, in_channels=64, reduce=32, bn_relu=True):
        super().__init__()
        self.bn_relu = bn_relu
        self.conv1 = nn.Conv2d(in_channels, reduce, 1, bias=False)
        if self.bn_relu:
            self.bn1 = nn.BatchNorm2d(reduce)

    def forward(self, x):
        x = self.conv1(x)
        if self.bn_relu:
            x = self.bn1(x)
            x = F.relu(x)
        return x


class RESA(nn.Module):
    # REcurrent Feature-Shift Aggregator in RESA paper
    def __init__(self, num_channels=32, iteration=3, alpha=2.0):
        super().__init__()
        self.iteration = iteration
        self.alpha = alpha
        self.conv_d = nn.ModuleList(nn.Conv2d(num_channels, num_channels, (1, 9), padding=(0, 4), bias=False)
                                    for _ in range(iteration))
        self.conv_u = nn.ModuleList(nn.Conv2d(num_channels, num_channels, (1, 9), padding=(0, 4), bias=False)
                                    for _ in range(iteration))
        self.conv_r = nn.ModuleList(nn.Conv2d(num_channels, num_channels, (9, 1), padding=(4, 0), bias=False)
                                    for _ in range(iteration))
        self.conv_l = nn.ModuleList(nn.Conv2d(num_channels, num_channels, (9, 1), padding=(4, 0), bias=False)
                                    for _ in range(iteration))
        bound = math.sqrt(2.0 / (num_channels * 9 * 5))
        for convs in (self.conv_d, self.conv_u, self.conv_r, self.conv_l):
            for conv in convs:
                nn.init.uniform_(conv.weight, -bound, bound)

    def forward(self, x):
        y = x
        h, w = y.shape[-2:]
        # Down
        for i in range(self.iteration):
            idx = (torch.arange(h) + h // 2 ** (self.iteration - i)) % h
            y = y + (self.alpha * F.relu(self.conv_d[i](y[:, :, idx, :])))
        # Up
        for i in range(self.iteration):
            idx = (torch.arange(h) - h // 2 ** (self.iteration - i)) % h
            y = y + (self.alpha * F.relu(self.conv_u[i](y[:, :, idx, :])))
        # Right
        for i in range(self.iteration):
            idx = (torch.arange(w) + w // 2 ** (self.iteration - i)) % w
            y = y + (self.alpha * F.relu(self.conv_r[i](y[:, :, :, idx])))
        # Left
        for i in range(self.iteration):
            idx = (torch.arange(w) - w // 2 ** (self.iteration - i)) % w
            y = y + (self.alpha * F.relu(self.conv_l[i](y[:, :, :, idx])))
        return y


class PlainDecoder(nn.Module):
    def __init__(self, in_channels=32, num_classes=NUM_LANES + 1):
        super().__init__()
        self.dropout1 = nn.Dropout2d(0.1)
        self.conv1 = nn.Conv2d(in_channels, num_classes, 1, bias=True)

    def forward(self, x):
        x = self.dropout1(x)
        x = self.conv1(x)
        return F.interpolate(x, size=(H, W), mode="bilinear", align_corners=True)


class RESALaneExist(nn.Module):
    def __init__(self, num_output=NUM_LANES, in_channels=32, flattened_size=(NUM_LANES + 1) * (H // 16) * (W // 16)):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, NUM_LANES + 1, 1)
        self.pool = nn.AvgPool2d(2, 2)
        self.linear1 = nn.Linear(flattened_size, 32)
        self.linear2 = nn.Linear(32, num_output)

    def forward(self, x):
        x = F.softmax(self.conv(x), dim=1)
        x = self.pool(x).flatten(start_dim=1)
        x = F.relu(self.linear1(x))
        return self.linear2(x)


class RESA_Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = TinyBackbone()
        self.channel_reducer = RESAReducer(in_channels=64, reduce=32)
        self.spatial_conv = RESA(num_channels=32, iteration=2)
        self.decoder = PlainDecoder()
        self.lane_classifier = RESALaneExist()

    def forward(self, x):
        x = self.backbone(x)
        x = self.channel_reducer(x)
        x = self.spatial_conv(x)
        return {"out": self.decoder(x), "lane": self.lane_classifier(x)}


class LaneLoss(nn.Module):
    def __init__(self, existence_weight=0.1, weight=None, ignore_index=255):
        super().__init__()
        self.existence_weight = existence_weight
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, outputs, targets, lane_existence):
        segmentation_loss = F.cross_entropy(outputs["out"], targets, weight=self.weight,
                                            ignore_index=self.ignore_index)
        existence_loss = F.binary_cross_entropy_with_logits(outputs["lane"], lane_existence)
        return segmentation_loss + self.existence_weight * existence_loss


def synthetic_culane(n=8):
    images = torch.randn(n, 3, H, W)
    masks = torch.randint(0, NUM_LANES + 1, (n, H, W))
    existence = torch.stack([(masks == k + 1).flatten(1).any(1) for k in range(NUM_LANES)], 1).float()
    return images, masks, existence


def train_one_epoch(net, criterion, optimizer, images, masks, existence, batch_size=4):
    net.train()
    for start in range(0, len(images), batch_size):
        inputs = images[start:start + batch_size]
        labels = masks[start:start + batch_size]
        lane_existence = existence[start:start + batch_size]
        outputs = net(inputs)
        loss = criterion(outputs, labels, lane_existence)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"loss {loss.item():.4f}")


def main():
    net = RESA_Net()
    criterion = LaneLoss(weight=torch.tensor([0.4, 1.0, 1.0, 1.0, 1.0]))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.06, momentum=0.9, weight_decay=1e-4)
    images, masks, existence = synthetic_culane()
    for epoch in range(2):
        train_one_epoch(net, criterion, optimizer, images, masks, existence)


if __name__ == "__main__":
    main()
