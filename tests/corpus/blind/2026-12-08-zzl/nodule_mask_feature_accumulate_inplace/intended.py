"""SOLOv2-style instance segmentation of lung nodules on CT slices.

Source: https://github.com/OpenFirework/pytorch_solov2/issues/22
"请问大家有遇到 inplace operation 错误呀" (has anyone hit the inplace operation error?)

The author trained the repository's SOLOv2 and backward failed with "one of the variables
needed for gradient computation has been modified by an inplace operation:
[torch.FloatTensor [1, 128, 192, 120]], which is output 0 of ReluBackward0, is at version 3;
expected version 0". Besides downgrading PyTorch, the fix the author reports is in
`MaskFeatHead.forward` (modules/mask_feat_head.py): the level-0 output of
`convs_all_levels[0]` (Conv -> GroupNorm -> ReLU) is the accumulator, and
`feature_add_all_level += self.convs_all_levels[i](input_p)` adds the other levels into it in
place, overwriting the ReLU output that ReLU's backward needs (three `+=`, version 3). Writing
`feature_add_all_level = self.convs_all_levels[i](input_p) + feature_add_all_level` fixes it.

Reduction: the head is kept as in the repository (per-level conv/GN/ReLU/upsample stacks, the
CoordConv channels on the coarsest level, `conv_pred` with an in-place ReLU after GroupNorm),
fed by a small four-level conv backbone, with a SOLO kernel/category branch on a 6x6 grid,
Dice loss on the dynamic-convolution masks and BCE on the category map, trained with SGD on
synthetic 64x64 CT slices holding one to three bright round nodules on a noisy lung field.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "n_slices": 24,
    "size": 64,
    "batch_size": 8,
    "grid": 6,
    "feat_channels": 32,
    "mask_channels": 16,
    "lr": 0.01,
    "momentum": 0.9,
    "weight_decay": 1e-4,
    "epochs": 2,
    "cate_weight": 1.0,
}


def conv_gn_relu(cin, cout, inplace=False):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                         nn.GroupNorm(num_channels=cout, num_groups=8),
                         nn.ReLU(inplace=inplace))


class Backbone(nn.Module):
    """Four feature levels at strides 4, 8, 16, 32."""

    def __init__(self, c):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, c, 3, 2, 1), nn.ReLU(), nn.Conv2d(c, c, 3, 2, 1), nn.ReLU())
        self.down = nn.ModuleList([nn.Sequential(nn.Conv2d(c, c, 3, 2, 1), nn.ReLU()) for _ in range(3)])

    def forward(self, x):
        feats = [self.stem(x)]
        for layer in self.down:
            feats.append(layer(feats[-1]))
        return feats


class MaskFeatHead(nn.Module):
    def __init__(self, in_channels, out_channels, start_level, end_level, num_classes):
        super().__init__()
        self.start_level = start_level
        self.end_level = end_level
        self.convs_all_levels = nn.ModuleList()
        for i in range(start_level, end_level + 1):
            convs_per_level = nn.Sequential()
            if i == 0:
                convs_per_level.add_module("conv0", conv_gn_relu(in_channels, out_channels))
                self.convs_all_levels.append(convs_per_level)
                continue
            for j in range(i):
                chn = (in_channels + 2 if i == 3 else in_channels) if j == 0 else out_channels
                convs_per_level.add_module("conv" + str(j), conv_gn_relu(chn, out_channels))
                convs_per_level.add_module("upsample" + str(j), nn.Upsample(
                    scale_factor=2, mode="bilinear", align_corners=False))
            self.convs_all_levels.append(convs_per_level)
        self.conv_pred = nn.Sequential(
            nn.Conv2d(out_channels, num_classes, 1, padding=0, bias=False),
            nn.GroupNorm(num_channels=num_classes, num_groups=8),
            nn.ReLU(inplace=True))

    def forward(self, inputs):
        feature_add_all_level = self.convs_all_levels[0](inputs[0])
        for i in range(1, len(inputs)):
            input_p = inputs[i]
            if i == 3:
                x_range = torch.linspace(-1, 1, input_p.shape[-1])
                y_range = torch.linspace(-1, 1, input_p.shape[-2])
                y, x = torch.meshgrid(y_range, x_range, indexing="ij")
                y = y.expand([input_p.shape[0], 1, -1, -1])
                x = x.expand([input_p.shape[0], 1, -1, -1])
                input_p = torch.cat([input_p, x, y], 1)
            feature_add_all_level = self.convs_all_levels[i](input_p) + feature_add_all_level
        return self.conv_pred(feature_add_all_level)


class KernelCateHead(nn.Module):
    """Predicts, per grid cell, a nodule score and a 1x1 dynamic kernel for the mask features."""

    def __init__(self, c, kernel_dim, grid):
        super().__init__()
        self.grid = grid
        self.kernel_convs = nn.Sequential(conv_gn_relu(c + 2, c), conv_gn_relu(c, c))
        self.cate_convs = nn.Sequential(conv_gn_relu(c, c), conv_gn_relu(c, c))
        self.solo_kernel = nn.Conv2d(c, kernel_dim, 3, padding=1)
        self.solo_cate = nn.Conv2d(c, 1, 3, padding=1)

    def forward(self, feat):
        n, _, h, w = feat.shape
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
        coord = torch.stack([xs, ys]).expand(n, -1, -1, -1)
        k_in = F.interpolate(torch.cat([feat, coord], 1), size=self.grid, mode="bilinear", align_corners=False)
        c_in = F.interpolate(feat, size=self.grid, mode="bilinear", align_corners=False)
        kernels = self.solo_kernel(self.kernel_convs(k_in))
        cate = self.solo_cate(self.cate_convs(c_in))
        return kernels, cate


class SOLOv2(nn.Module):
    def __init__(self, hp):
        super().__init__()
        c, m = hp["feat_channels"], hp["mask_channels"]
        self.backbone = Backbone(c)
        self.mask_feat_head = MaskFeatHead(c, c, 0, 3, m)
        self.bbox_head = KernelCateHead(c, m, hp["grid"])

    def forward(self, img):
        feats = self.backbone(img)
        mask_feat = self.mask_feat_head(feats)
        kernels, cate = self.bbox_head(feats[1])
        return mask_feat, kernels, cate


def dice_loss(pred, target):
    a = (pred * target).sum((1, 2))
    b = (pred * pred).sum((1, 2)) + 0.001
    c = (target * target).sum((1, 2)) + 0.001
    return 1 - 2 * a / (b + c)


def make_slices(hp):
    n, s, g = hp["n_slices"], hp["size"], hp["grid"]
    yy, xx = torch.meshgrid(torch.arange(s).float(), torch.arange(s).float(), indexing="ij")
    images = 0.15 * torch.randn(n, 1, s, s) - 0.6
    targets = []
    for k in range(n):
        count = int(torch.randint(1, 4, (1,)))
        centres = 8 + torch.rand(count, 2) * (s - 16)
        radii = 3 + torch.rand(count) * 4
        masks, cells = [], []
        for (cy, cx), r in zip(centres, radii):
            disk = (((yy - cy) ** 2 + (xx - cx) ** 2) <= r ** 2).float()
            images[k, 0] += disk * (1.2 + 0.2 * torch.randn(()))
            masks.append(disk[::4, ::4])
            cells.append(int(cy / s * g) * g + int(cx / s * g))
        targets.append((torch.stack(masks), torch.tensor(cells)))
    return images, targets


def solo_loss(mask_feat, kernels, cate, targets, hp):
    g = hp["grid"]
    ins_losses, cate_target = [], torch.zeros_like(cate)
    for b, (masks, cells) in enumerate(targets):
        k = kernels[b].flatten(1)[:, cells].t()                  # (n_inst, m)
        pred = torch.sigmoid(torch.einsum("km,mhw->khw", k, mask_feat[b]))
        ins_losses.append(dice_loss(pred, masks))
        cate_target[b, 0].view(-1)[cells] = 1.0
    loss_ins = torch.cat(ins_losses).mean()
    loss_cate = F.binary_cross_entropy_with_logits(cate, cate_target)
    return loss_ins, loss_cate


def main():
    torch.manual_seed(3)
    hp = HPARAMS
    images, targets = make_slices(hp)
    model = SOLOv2(hp)
    optimizer = torch.optim.SGD(model.parameters(), lr=hp["lr"], momentum=hp["momentum"],
                                weight_decay=hp["weight_decay"])
    bs = hp["batch_size"]
    for epoch in range(hp["epochs"]):
        model.train()
        for i in range(0, hp["n_slices"], bs):
            img = images[i:i + bs]
            tgt = targets[i:i + bs]
            mask_feat, kernels, cate = model(img)
            loss_ins, loss_cate = solo_loss(mask_feat, kernels, cate, tgt, hp)
            loss = loss_ins + hp["cate_weight"] * loss_cate
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} iter {i // bs}: ins {loss_ins.item():.4f} cate {loss_cate.item():.4f}")


if __name__ == "__main__":
    main()
