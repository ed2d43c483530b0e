"""Fine-tuning a DPT depth head on a frozen DINOv2-style ViT backbone, as the hub depther builds it.

Source: https://github.com/facebookresearch/dinov2/issues/399 "Inference Tensors Problem"
(also https://github.com/facebookresearch/dinov2/issues/472).
The author built the depther with ``dinov2.hub.depthers._make_dinov2_dpt_depther`` to fine-tune
the DPT head on a monocular-depth dataset with the ViT backbone frozen, and called
``model.forward_train``. Reduced: a 2-block ViT with 4x4 patches, a small DPT-like head, random
30x30 images (padded to 32x32 by the backbone's pre-hook) and 32x32 depth maps; ``CenterPadding`` and the backbone wiring are the hub's.
Corrected as the reporters did: the ``@torch.inference_mode()`` decoration of
``CenterPadding.forward`` is removed, so the padded image is an ordinary tensor.
"""

import itertools
import math
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F


class CenterPadding(nn.Module):
    def __init__(self, multiple):
        super().__init__()
        self.multiple = multiple

    def _get_pad(self, size):
        new_size = math.ceil(size / self.multiple) * self.multiple
        pad_size = new_size - size
        pad_size_left = pad_size // 2
        pad_size_right = pad_size - pad_size_left
        return pad_size_left, pad_size_right

    def forward(self, x):
        pads = list(itertools.chain.from_iterable(self._get_pad(m) for m in x.shape[:1:-1]))
        output = F.pad(x, pads)
        return output


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class DinoVisionTransformer(nn.Module):
    def __init__(self, patch_size=4, embed_dim=32, depth=2, num_heads=4):
        super().__init__()
        self.patch_size = patch_size
        self.patch_embed = nn.Conv2d(3, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, 1 + 64, embed_dim) * 0.02)
        self.blocks = nn.ModuleList([Block(embed_dim, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim)

    def get_intermediate_layers(self, x, n=1, reshape=False, return_class_token=False, norm=True):
        b, _, h, w = x.shape
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(b, -1, -1), x], dim=1) + self.pos_embed[:, : x.shape[1] + 1]
        outputs = []
        for i, blk in enumerate(self.blocks):
            x = blk(x)
            if i in n:
                outputs.append(x)
        if norm:
            outputs = [self.norm(out) for out in outputs]
        class_tokens = [out[:, 0] for out in outputs]
        outputs = [out[:, 1:] for out in outputs]
        if reshape:
            outputs = [
                out.reshape(b, h // self.patch_size, w // self.patch_size, -1).permute(0, 3, 1, 2).contiguous()
                for out in outputs
            ]
        if return_class_token:
            return tuple(zip(outputs, class_tokens))
        return tuple(outputs)


class DPTHead(nn.Module):
    def __init__(self, in_channels, channels=16, min_depth=0.001, max_depth=10.0):
        super().__init__()
        self.min_depth, self.max_depth = min_depth, max_depth
        self.reassemble = nn.ModuleList([nn.Conv2d(in_channels * 2, channels, 1) for _ in range(2)])
        self.fusion = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv_depth = nn.Conv2d(channels, 1, 3, padding=1)

    def forward(self, inputs, img_shape):
        feats = []
        for (x, cls_token), reassemble in zip(inputs, self.reassemble):
            readout = cls_token[:, :, None, None].expand_as(x)
            feats.append(reassemble(torch.cat([x, readout], dim=1)))
        out = F.relu(self.fusion(sum(feats)))
        out = F.interpolate(out, size=img_shape, mode="bilinear", align_corners=False)
        return torch.sigmoid(self.conv_depth(out)) * self.max_depth + self.min_depth

    def forward_train(self, inputs, img_metas, depth_gt):
        depth_pred = self.forward(inputs, depth_gt.shape[-2:])
        return {"loss_depth": F.l1_loss(depth_pred, depth_gt)}


class DepthEncoderDecoder(nn.Module):
    def __init__(self, backbone, decode_head):
        super().__init__()
        self.backbone = backbone
        self.decode_head = decode_head

    def extract_feat(self, img):
        return self.backbone(img)

    def forward_train(self, img, img_metas, depth_gt):
        x = self.extract_feat(img)
        losses = self.decode_head.forward_train(x, img_metas, depth_gt)
        return losses


def _make_dinov2_dpt_depther(out_index=(0, 1)):
    backbone = DinoVisionTransformer()
    backbone.forward = partial(
        backbone.get_intermediate_layers,
        n=out_index,
        reshape=True,
        return_class_token=True,
        norm=False,
    )
    backbone.register_forward_pre_hook(lambda _, x: CenterPadding(backbone.patch_size)(x[0]))
    return DepthEncoderDecoder(backbone=backbone, decode_head=DPTHead(in_channels=32))


def main():
    torch.manual_seed(0)
    model = _make_dinov2_dpt_depther()
    optimizer = torch.optim.AdamW(model.decode_head.parameters(), lr=1e-3)
    images = torch.randn(8, 3, 30, 30)
    depths = torch.rand(8, 1, 32, 32) * 10
    for epoch in range(2):
        for i in range(0, 8, 2):
            losses = model.forward_train(images[i : i + 2], None, depths[i : i + 2])
            loss = losses["loss_depth"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(epoch, i, loss.item())


if __name__ == "__main__":
    main()
