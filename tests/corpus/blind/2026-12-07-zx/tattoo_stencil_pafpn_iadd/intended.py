"""Tattoo stencil generation: predict the line map a tattoo artist would trace from a shaded sketch.

Source: https://github.com/open-mmlab/mmdetection/pull/9450
"Fix backward inplace error with pafpn": with ``act_cfg=dict(type='ReLU')`` in PAFPN's ConvModules, training
raised the in-place RuntimeError in backward, because the bottom-up path aggregated with
``inter_outs[i + 1] += self.downsample_convs[i](inter_outs[i])`` into outputs of activated convs. The PR
replaced the in-place additions with out-of-place ones.

Reduction: a small three-level conv backbone over 32x32 shaded sketches, a PAFPN-style neck (lateral
convs, top-down path, conv+ReLU per level, bottom-up path with strided conv+ReLU), and a head that
fuses the levels into per-pixel stencil-line logits, trained with BCE against synthetic line maps.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

CONFIG = {
    "n_sketches": 12,
    "size": 32,
    "channels": (8, 16, 32),
    "neck_channels": 8,
    "batch_size": 4,
    "epochs": 2,
    "lr": 2e-3,
}


def make_sketches(cfg):
    """Smooth random shading; the stencil target marks where the shading changes sharply."""
    n, s = cfg["n_sketches"], cfg["size"]
    coarse = torch.rand(n, 1, s // 8, s // 8)
    shading = F.interpolate(coarse, size=(s, s), mode="bilinear", align_corners=False)
    dx = (shading[..., :, 1:] - shading[..., :, :-1]).abs()
    dy = (shading[..., 1:, :] - shading[..., :-1, :]).abs()
    edges = F.pad(dx, (0, 1)) + F.pad(dy, (0, 0, 0, 1))
    lines = (edges > edges.flatten(1).quantile(0.8, dim=1).view(n, 1, 1, 1)).float()
    return shading + 0.05 * torch.randn_like(shading), lines


def conv_act(in_ch, out_ch, stride=1):
    return nn.Sequential(nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1), nn.ReLU())


class SketchBackbone(nn.Module):
    def __init__(self, channels):
        super().__init__()
        c1, c2, c3 = channels
        self.stage1 = conv_act(1, c1)
        self.stage2 = conv_act(c1, c2, stride=2)
        self.stage3 = conv_act(c2, c3, stride=2)

    def forward(self, x):
        f1 = self.stage1(x)
        f2 = self.stage2(f1)
        f3 = self.stage3(f2)
        return [f1, f2, f3]


class PathAggregationNeck(nn.Module):
    def __init__(self, in_channels, out_ch):
        super().__init__()
        self.lateral_convs = nn.ModuleList(nn.Conv2d(c, out_ch, 1) for c in in_channels)
        self.fpn_convs = nn.ModuleList(conv_act(out_ch, out_ch) for _ in in_channels)
        self.downsample_convs = nn.ModuleList(conv_act(out_ch, out_ch, stride=2) for _ in in_channels[1:])
        self.pafpn_convs = nn.ModuleList(conv_act(out_ch, out_ch) for _ in in_channels[1:])

    def forward(self, feats):
        laterals = [conv(f) for conv, f in zip(self.lateral_convs, feats)]
        for i in range(len(laterals) - 1, 0, -1):
            laterals[i - 1] = laterals[i - 1] + F.interpolate(laterals[i], size=laterals[i - 1].shape[-2:], mode="nearest")
        inter_outs = [conv(lat) for conv, lat in zip(self.fpn_convs, laterals)]
        for i in range(len(inter_outs) - 1):
            inter_outs[i + 1] = inter_outs[i + 1] + self.downsample_convs[i](inter_outs[i])
        outs = [inter_outs[0]]
        outs.extend(conv(x) for conv, x in zip(self.pafpn_convs, inter_outs[1:]))
        return outs


class StencilHead(nn.Module):
    def __init__(self, ch, n_levels):
        super().__init__()
        self.fuse = nn.Conv2d(ch * n_levels, ch, 3, padding=1)
        self.out = nn.Conv2d(ch, 1, 1)

    def forward(self, levels):
        size = levels[0].shape[-2:]
        ups = [levels[0]] + [F.interpolate(l, size=size, mode="bilinear", align_corners=False) for l in levels[1:]]
        return self.out(F.relu(self.fuse(torch.cat(ups, dim=1))))


def train(cfg):
    sketches, lines = make_sketches(cfg)
    backbone = SketchBackbone(cfg["channels"])
    neck = PathAggregationNeck(cfg["channels"], cfg["neck_channels"])
    head = StencilHead(cfg["neck_channels"], len(cfg["channels"]))
    params = list(backbone.parameters()) + list(neck.parameters()) + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=cfg["lr"])
    pos_weight = torch.tensor([4.0])
    for epoch in range(cfg["epochs"]):
        for start in range(0, cfg["n_sketches"], cfg["batch_size"]):
            x = sketches[start:start + cfg["batch_size"]]
            y = lines[start:start + cfg["batch_size"]]
            logits = head(neck(backbone(x)))
            line_loss = F.binary_cross_entropy_with_logits(logits, y, pos_weight=pos_weight)
            optimizer.zero_grad()
            line_loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: line BCE {line_loss.item():.4f}")


if __name__ == "__main__":
    train(CONFIG)
