"""Inverse knitting: predict the stitch-instruction map from a photo of knitted fabric.

Source: https://github.com/open-mmlab/mmocr/pull/884 -- training PSENet/PANet raised
"one of the variables needed for gradient computation has been modified by an
inplace operation".  The FPEM_FFM neck took the first FPEM stage's outputs as the
fusion accumulators (``c2_ffm = c2`` ...) and then added the later stages into them
with ``c2_ffm += c2`` ...; the first stage's outputs were also the inputs the next
stage had saved.  The PR replaced the four ``+=`` with out-of-place additions.

Here the same neck shape (two feature-pyramid enhancement stages, fused by summing
the stages' outputs) sits between a small CNN backbone and a per-cell classifier
that emits one of six stitch instructions (knit, purl, tuck, miss, transfer left,
transfer right) for each cell of an 8x8 program grid.  Synthetic fabric images.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(8)

N_STITCH = 6
GRID = 8
CH = 16


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, CH, stride=2)      # 16x16
        self.stage3 = conv_bn(CH, CH, stride=2)   # 8x8

    def forward(self, img):
        c2 = self.stem(img)
        c3 = self.stage3(c2)
        return c2, c3


class FPEM(nn.Module):
    """Up-scale then down-scale enhancement over two pyramid levels."""

    def __init__(self):
        super().__init__()
        self.up2 = conv_bn(CH, CH)
        self.down_sample2 = nn.Conv2d(CH, CH, 3, 2, 1, groups=CH)
        self.down3 = conv_bn(CH, CH)

    def forward(self, c2, c3):
        c2 = self.up2(c2 + F.interpolate(c3, scale_factor=2, mode="nearest"))
        c3 = self.down3(c3 + self.down_sample2(c2))
        return c2, c3


class StitchNeck(nn.Module):
    def __init__(self, n_stages=2):
        super().__init__()
        self.fpems = nn.ModuleList([FPEM() for _ in range(n_stages)])

    def forward(self, c2, c3):
        for i, fpem in enumerate(self.fpems):
            c2, c3 = fpem(c2, c3)
            if i == 0:
                c2_ffm, c3_ffm = c2, c3
            else:
                c2_ffm += c2
                c3_ffm += c3
        c3_up = F.interpolate(c3_ffm, size=c2_ffm.shape[-2:], mode="nearest")
        return torch.cat([c2_ffm, c3_up], dim=1)


class StitchHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.cls = nn.Sequential(conv_bn(2 * CH, CH), nn.Conv2d(CH, N_STITCH, 1))

    def forward(self, fused):
        return F.adaptive_avg_pool2d(self.cls(fused), GRID)


def fabric_batch(n=12):
    program = torch.randint(0, N_STITCH, (n, GRID, GRID))
    base = F.one_hot(program, N_STITCH).permute(0, 3, 1, 2).float()[:, :3]
    img = F.interpolate(base, size=32, mode="bilinear", align_corners=False)
    img = img + 0.2 * torch.randn_like(img)
    return img, program


def main():
    backbone, neck, head = Backbone(), StitchNeck(), StitchHead()
    params = list(backbone.parameters()) + list(neck.parameters()) + list(head.parameters())
    sgd = torch.optim.SGD(params, lr=0.05, momentum=0.9)
    for it in range(4):
        img, program = fabric_batch()
        logits = head(neck(*backbone(img)))
        stitch_loss = F.cross_entropy(logits, program)
        sgd.zero_grad()
        stitch_loss.backward()
        sgd.step()
        acc = (logits.argmax(1) == program).float().mean().item()
        print(f"iter {it}: loss {stitch_loss.item():.4f} cell acc {acc:.3f}")


if __name__ == "__main__":
    main()
