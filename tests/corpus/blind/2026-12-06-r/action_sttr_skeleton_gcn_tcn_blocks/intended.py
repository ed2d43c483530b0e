"""Skeleton-based action recognition (ST-GCN / ST-TR layout), reduced from a public report.

Source: https://github.com/Chiaraplizz/ST-TR/issues/36 ("A problem about error: inplace operation").
The author trains ST-TR's spatial-temporal network on NTU-RGB+D skeletons: a data batch norm over
joints, a stack of TCN_GCN units (a graph convolution over the skeleton's adjacency partitions
followed by a temporal convolution unit, with a residual branch), global pooling and a 1x1
convolution classifier, trained with SGD and cross-entropy. Synthetic skeleton clips (5 joints,
16 frames), CPU.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_JOINTS = 5
NUM_FRAMES = 16
NUM_CLASSES = 4


def conv_init(module):
    n = module.out_channels
    for k in module.kernel_size:
        n = n * k
    module.weight.data.normal_(0, math.sqrt(2.0 / n))


def skeleton_partitions(num_joints):
    """Identity, inward and outward adjacency partitions of a chain skeleton, column-normalised."""
    inward = torch.zeros(num_joints, num_joints)
    for j in range(1, num_joints):
        inward[j, j - 1] = 1.0
    outward = inward.t().clone()
    parts = [torch.eye(num_joints), inward, outward]
    normed = []
    for a in parts:
        degree = a.sum(0)
        degree[degree == 0] = 1.0
        normed.append(a / degree)
    return torch.stack(normed)


class Unit2D(nn.Module):
    """Temporal convolution unit: dropout, (k x 1) convolution, batch norm, ReLU."""

    def __init__(self, D_in, D_out, kernel_size, stride=1, dropout=0.0):
        super().__init__()
        pad = int((kernel_size - 1) / 2)
        self.conv = nn.Conv2d(D_in, D_out, kernel_size=(kernel_size, 1), padding=(pad, 0), stride=(stride, 1))
        self.bn = nn.BatchNorm2d(D_out)
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout(dropout)
        conv_init(self.conv)

    def forward(self, x):
        x = self.dropout(x)
        x = self.relu(self.bn(self.conv(x)))
        return x


class unit_gcn(nn.Module):
    """Graph convolution over the skeleton: one 1x1 convolution per adjacency partition."""

    def __init__(self, in_channels, out_channels, A):
        super().__init__()
        self.register_buffer("A", A.clone())
        self.V = A.size(-1)
        self.conv_list = nn.ModuleList([nn.Conv2d(in_channels, out_channels, kernel_size=1) for _ in range(A.size(0))])
        self.bn = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()
        for conv in self.conv_list:
            conv_init(conv)

    def forward(self, x):
        N, C, T, V = x.size()
        y = None
        for i, a in enumerate(self.A):
            xa = x.reshape(-1, V).mm(a).reshape(N, C, T, V)
            y = self.conv_list[i](xa) if y is None else y + self.conv_list[i](xa)
        y = self.bn(y)
        y = self.relu(y)
        return y


class TCN_GCN_unit(nn.Module):
    def __init__(self, in_channel, out_channel, A, kernel_size=9, stride=1, dropout=0.5):
        super().__init__()
        self.gcn1 = unit_gcn(in_channel, out_channel, A)
        self.tcn1 = Unit2D(out_channel, out_channel, kernel_size=kernel_size, dropout=dropout, stride=stride)
        if in_channel != out_channel or stride != 1:
            self.down1 = Unit2D(in_channel, out_channel, kernel_size=1, stride=stride)
        else:
            self.down1 = None

    def forward(self, x):
        return self.tcn1(self.gcn1(x)) + (x if self.down1 is None else self.down1(x))


class STModel(nn.Module):
    def __init__(self, num_class, num_point, in_channels=3, dropout=0.5):
        super().__init__()
        A = skeleton_partitions(num_point)
        self.data_bn = nn.BatchNorm1d(in_channels * num_point)
        self.gcn0 = unit_gcn(in_channels, 16, A)
        self.tcn0 = Unit2D(16, 16, kernel_size=9)
        self.backbone = nn.ModuleList(
            [
                TCN_GCN_unit(16, 16, A, dropout=dropout),
                TCN_GCN_unit(16, 32, A, stride=2, dropout=dropout),
                TCN_GCN_unit(32, 32, A, dropout=dropout),
            ]
        )
        self.fcn = nn.Conv1d(32, num_class, kernel_size=1)
        conv_init(self.fcn)

    def forward(self, x):
        N, C, T, V = x.size()
        x = x.permute(0, 3, 1, 2).contiguous().view(N, V * C, T)
        x = self.data_bn(x)
        x = x.view(N, V, C, T).permute(0, 2, 3, 1).contiguous()
        x = self.tcn0(self.gcn0(x))
        for m in self.backbone:
            x = m(x)
        x = F.avg_pool2d(x, kernel_size=(1, V))
        c, t = x.size(1), x.size(2)
        x = x.view(N, c, t)
        x = F.avg_pool1d(x, kernel_size=t)
        x = self.fcn(x)
        return x.view(N, -1)


def make_clips(num_clips):
    motions = torch.randn(NUM_CLASSES, 3, 1, NUM_JOINTS)
    labels = torch.randint(0, NUM_CLASSES, (num_clips,))
    time = torch.linspace(0, 1, NUM_FRAMES).view(1, 1, NUM_FRAMES, 1)
    clips = motions[labels] * time + 0.1 * torch.randn(num_clips, 3, NUM_FRAMES, NUM_JOINTS)
    return clips, labels


def train_epoch(model, optimizer, loader):
    model.train()
    loss_fn = nn.CrossEntropyLoss()
    for data, label in loader:
        output = model(data)
        loss = loss_fn(output, label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


if __name__ == "__main__":
    clips, labels = make_clips(32)
    loader = [(clips[i : i + 8], labels[i : i + 8]) for i in range(0, 32, 8)]
    model = STModel(num_class=NUM_CLASSES, num_point=NUM_JOINTS, dropout=0.5)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
    for epoch in range(2):
        print(f"epoch {epoch}: loss {train_epoch(model, optimizer, loader):.4f}")
