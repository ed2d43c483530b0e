"""Point-cloud classification with a sparse-convolution style encoder (torch-points3d layout, SparseConv3d encoder).

Source: https://github.com/torch-points3d/torch-points3d/issues/741

The author builds a classification model from the library's encoder factory:
a stack of down-sampling residual blocks (convolution, batch norm, ReLU) and an
innermost ``GlobalBaseModule`` that pools the remaining points of each cloud
and runs an MLP on the pooled feature. The innermost module is configured from
a dict (the YAML config in the report) that asks for a LeakyReLU activation
with slope 0.2 and ``inplace: False``; a linear classifier follows. The
convolutions are written here as shared per-point linear layers with stride by
sub-sampling, on synthetic clouds of 64 points with 3 coordinates and 3 colour
channels, 5 classes, Adam.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)


class Conv3d(nn.Module):
    """Point-wise 'convolution' with a stride: keeps every `stride`-th point."""

    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.stride = stride

    def forward(self, x):
        return self.lin(x[:, :: self.stride, :])


class PointBatchNorm(nn.BatchNorm1d):
    def forward(self, x):
        return super().forward(x.transpose(1, 2)).transpose(1, 2)


class ResBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.block = nn.Sequential(
            Conv3d(channels, channels), PointBatchNorm(channels), nn.ReLU(),
            Conv3d(channels, channels), PointBatchNorm(channels), nn.ReLU(),
        )

    def forward(self, x):
        return self.block(x) + x


class ResNetDown(nn.Module):
    def __init__(self, in_channels, out_channels, stride, n_blocks):
        super().__init__()
        self.conv_in = nn.Sequential(Conv3d(in_channels, out_channels, stride), PointBatchNorm(out_channels), nn.ReLU())
        self.blocks = nn.Sequential(*[ResBlock(out_channels) for _ in range(n_blocks)]) if n_blocks else None

    def forward(self, x):
        x = self.conv_in(x)
        if self.blocks is not None:
            x = F.relu(self.blocks(x))
        return x


def MLP(channels):
    return nn.Sequential(*[
        nn.Sequential(nn.Linear(channels[i - 1], channels[i]), nn.BatchNorm1d(channels[i]), nn.LeakyReLU(0.2))
        for i in range(1, len(channels))
    ])


class GlobalBaseModule(nn.Module):
    def __init__(self, nn, aggr="max", *args, **kwargs):
        super().__init__()
        self.activation = torch.nn.LeakyReLU(negative_slope=0.2, inplace=False)
        self.nn = MLP(nn)
        self.aggr = aggr

    def forward(self, x):
        x = self.activation(x)
        x = x.max(dim=1).values if self.aggr == "max" else x.mean(dim=1)
        return self.nn(x)


class SparseConv3dEncoder(nn.Module):
    def __init__(self, input_nc, down_conv_nn, strides, n_blocks, innermost):
        super().__init__()
        self.down_modules = nn.ModuleList()
        in_ch = input_nc
        for out_ch, stride, nb in zip(down_conv_nn, strides, n_blocks):
            self.down_modules.append(ResNetDown(in_ch, out_ch, stride, nb))
            in_ch = out_ch
        args_innermost = dict(innermost)
        module_name = args_innermost.pop("module_name")
        assert module_name == "GlobalBaseModule"
        self.inner_modules = nn.ModuleList([GlobalBaseModule(**args_innermost)])

    def forward(self, x):
        for down in self.down_modules:
            x = down(x)
        return self.inner_modules[0](x)


class Classifier(nn.Module):
    def __init__(self, config, num_classes):
        super().__init__()
        self.backbone = SparseConv3dEncoder(**config)
        self.head = nn.Linear(config["innermost"]["nn"][-1], num_classes)

    def forward(self, x):
        return self.head(self.backbone(x))


in_feat = 8
config = {
    "input_nc": 6,
    "down_conv_nn": [in_feat, 2 * in_feat, 4 * in_feat],
    "strides": [1, 2, 2],
    "n_blocks": [0, 1, 1],
    "innermost": {
        "module_name": "GlobalBaseModule",
        "activation": {"name": "LeakyReLU", "negative_slope": 0.2, "inplace": False},
        "aggr": "mean",
        "nn": [4 * in_feat, 4 * in_feat],
    },
}

num_classes = 5
clouds = torch.randn(32, 64, 6)
labels = torch.randint(0, num_classes, (32,))

model = Classifier(config, num_classes)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(2):
    model.train()
    for i in range(0, len(clouds), 8):
        x, y = clouds[i : i + 8], labels[i : i + 8]
        optimizer.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} batch {i // 8} loss {loss.item():.4f}")
