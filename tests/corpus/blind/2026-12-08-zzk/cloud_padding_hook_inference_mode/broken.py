"""Cloud-top height estimation from geostationary infrared channels with a ViT backbone and a dense regression head.

Source: https://github.com/facebookresearch/dinov2/issues/472
("Official notebook model cannot do training,foward then raise RuntimeError: Inference
tensors cannot be saved for backward.").

The author took the depth-estimation model from the official DINOv2 notebook (ViT backbone
plus a depth head, built by the hub ``depthers`` helpers) and tried to train it: the very
first training forward, ``model(images, img_metas=None, depth_gt=depths,
return_loss=True)``, raised "Inference tensors cannot be saved for backward. To work
around you can make a clone to get a normal tensor and use it in autograd."  The cause is
the input padding: the hub registers ``CenterPadding(patch_size)`` as a forward pre-hook on
the backbone, and ``CenterPadding.forward`` is decorated with ``@torch.inference_mode()``,
so every padded image is an inference tensor that the patch-embedding convolution then
tries to save for backward.  The author reports (and the related thread #399 agrees) that
removing that decoration solved it; the padding has no parameters, so nothing else
changes.

Reduction: a small ViT (patch size 4) with the same ``CenterPadding`` pre-hook on the
backbone and a dense head turning patch tokens into a per-pixel cloud-top height map,
cropped back to the 30x30 input.  Backbone and head are both fine-tuned with AdamW (two
parameter groups), on synthetic three-channel brightness-temperature scenes whose
cloud-top height follows the coldest channel.
"""
import itertools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "image": 30,
    "channels": 3,
    "patch": 4,
    "dim": 32,
    "depth": 2,
    "heads": 2,
    "n_scenes": 48,
    "batch_size": 8,
    "epochs": 2,
    "lr_backbone": 1e-4,
    "lr_head": 1e-3,
}


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

    @torch.inference_mode()
    def forward(self, x):
        pads = list(itertools.chain.from_iterable(self._get_pad(m) for m in x.shape[:1:-1]))
        return F.pad(x, pads)


class VisionTransformer(nn.Module):
    def __init__(self, in_ch, patch, dim, depth, heads, max_grid=8):
        super().__init__()
        self.patch_size = patch
        self.patch_embed = nn.Conv2d(in_ch, dim, kernel_size=patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, 1 + max_grid * max_grid, dim) * 0.02)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0,
                                       batch_first=True, norm_first=True)
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        tokens = self.patch_embed(x)                           # (b, d, gh, gw)
        b, d, gh, gw = tokens.shape
        tokens = tokens.flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls_token.expand(b, -1, -1), tokens], dim=1)
        tokens = tokens + self.pos_embed[:, : tokens.shape[1]]
        for blk in self.blocks:
            tokens = blk(tokens)
        tokens = self.norm(tokens)
        return tokens[:, 1:].transpose(1, 2).reshape(b, d, gh, gw)


class HeightHead(nn.Module):
    def __init__(self, dim, max_height=15.0):
        super().__init__()
        self.max_height = max_height
        self.conv = nn.Sequential(nn.Conv2d(dim, dim, 3, padding=1), nn.ReLU(), nn.Conv2d(dim, 1, 1))

    def forward(self, feats, out_size):
        h = self.conv(feats)
        h = F.interpolate(h, scale_factor=4, mode="bilinear", align_corners=False)
        pad_h = (h.shape[-2] - out_size[0]) // 2
        pad_w = (h.shape[-1] - out_size[1]) // 2
        h = h[..., pad_h:pad_h + out_size[0], pad_w:pad_w + out_size[1]]
        return self.max_height * torch.sigmoid(h)


class CloudTopModel(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.backbone = VisionTransformer(hp["channels"], hp["patch"], hp["dim"], hp["depth"], hp["heads"])
        self.decode_head = HeightHead(hp["dim"])
        self.backbone.register_forward_pre_hook(lambda _, x: CenterPadding(self.backbone.patch_size)(x[0]))

    def forward(self, images):
        return self.decode_head(self.backbone(images), images.shape[-2:])


def make_scenes(hp):
    n, s = hp["n_scenes"], hp["image"]
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, s), torch.linspace(-1, 1, s), indexing="ij")
    centers = torch.rand(n, 3, 2) * 2 - 1
    height = torch.zeros(n, s, s)
    for k in range(3):
        r2 = (yy - centers[:, k, 0, None, None]) ** 2 + (xx - centers[:, k, 1, None, None]) ** 2
        height = torch.maximum(height, 12.0 * torch.exp(-r2 / 0.15))
    bt = 290.0 - 6.5 * height                                   # lapse-rate brightness temperature
    channels = torch.stack([bt, bt + 2.0 * torch.randn(n, s, s), bt - 0.3 * height], dim=1)
    channels = (channels - 250.0) / 30.0
    return channels, height.unsqueeze(1)


def main():
    torch.manual_seed(5)
    hp = HPARAMS
    images, heights = make_scenes(hp)
    model = CloudTopModel(hp)
    optimizer = torch.optim.AdamW([
        {"params": model.backbone.parameters(), "lr": hp["lr_backbone"]},
        {"params": model.decode_head.parameters(), "lr": hp["lr_head"]},
    ], weight_decay=1e-4)
    for epoch in range(hp["epochs"]):
        model.train()
        perm = torch.randperm(hp["n_scenes"])
        running = 0.0
        for i in range(0, hp["n_scenes"], hp["batch_size"]):
            idx = perm[i:i + hp["batch_size"]]
            pred = model(images[idx])
            loss = F.smooth_l1_loss(pred, heights[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += loss.item()
        print(f"epoch {epoch}: height loss {running:.4f}")


if __name__ == "__main__":
    main()
