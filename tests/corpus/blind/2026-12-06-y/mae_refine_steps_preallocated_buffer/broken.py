"""Masked autoencoder with an iterative refinement decoder, every step kept in one preallocated tensor.

Reduced from https://github.com/pytorch/pytorch/issues/74806 ("Gradient computation on modified
tensor by in-place operator"). The reporter allocated one tensor without gradients, copied the
inputs into some of its positions and reduced them by writing each intermediate result into the
next position (``tensor[2] = op(tensor[0], tensor[1])``, ``tensor[4] = op(tensor[2], tensor[3])``).
With ``op=torch.add`` the gradient was computed; with ``op=torch.mul`` it failed with "one of the
variables needed for gradient computation has been modified by an inplace operation": ``mul``
saves its inputs, which are views of the workspace, and every later write into *another* position
bumps the version counter the views share with the whole tensor.

The training setting is the writer's: an MAE (random patch masking, a ViT encoder on the visible
patches, a light decoder) whose decoder refines its pixel prediction in a few gated steps,
``recon[t + 1] = recon[t] * gate + (1 - gate) * correction``, with all the intermediate
reconstructions written into one preallocated tensor so that every step can be supervised on the
masked patches (deep supervision).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

IMG, PATCH = 16, 4
N_PATCH = (IMG // PATCH) ** 2
PATCH_DIM = PATCH * PATCH
MASK_RATIO = 0.75
REFINE_STEPS = 3


def make_images(n):
    """Grey images with a few random bright rectangles."""
    imgs = 0.05 * torch.randn(n, 1, IMG, IMG)
    for i in range(n):
        for _ in range(3):
            y0, x0 = torch.randint(0, IMG - 4, (2,))
            h, w = torch.randint(2, 7, (2,))
            imgs[i, 0, y0:y0 + h, x0:x0 + w] += 1.0
    return imgs


def patchify(imgs):
    b = imgs.shape[0]
    x = imgs.reshape(b, 1, IMG // PATCH, PATCH, IMG // PATCH, PATCH)
    return x.permute(0, 2, 4, 3, 5, 1).reshape(b, N_PATCH, PATCH_DIM)


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_ratio=2):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class RefineMAE(nn.Module):
    def __init__(self, dim=32, dec_dim=24, depth=2):
        super().__init__()
        self.patch_embed = nn.Linear(PATCH_DIM, dim)
        self.pos = nn.Parameter(0.02 * torch.randn(1, N_PATCH, dim))
        self.encoder = nn.Sequential(*[Block(dim, 4) for _ in range(depth)], nn.LayerNorm(dim))
        self.dec_embed = nn.Linear(dim, dec_dim)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dec_dim))
        self.dec_pos = nn.Parameter(0.02 * torch.randn(1, N_PATCH, dec_dim))
        self.decoder = Block(dec_dim, 3)
        self.dec_pred = nn.Linear(dec_dim, PATCH_DIM)
        self.refine = nn.Linear(dec_dim + PATCH_DIM, 2 * PATCH_DIM)  # -> gate logits, correction

    def forward(self, imgs):
        patches = patchify(imgs)
        b = patches.shape[0]
        n_keep = int(N_PATCH * (1 - MASK_RATIO))
        ids_shuffle = torch.rand(b, N_PATCH).argsort(1)
        ids_restore = ids_shuffle.argsort(1)
        ids_keep = ids_shuffle[:, :n_keep]

        x = self.patch_embed(patches) + self.pos
        x = self.encoder(x.gather(1, ids_keep[..., None].expand(-1, -1, x.shape[-1])))
        x = self.dec_embed(x)
        x = torch.cat([x, self.mask_token.expand(b, N_PATCH - n_keep, -1)], 1)
        x = x.gather(1, ids_restore[..., None].expand(-1, -1, x.shape[-1])) + self.dec_pos
        h = self.decoder(x)

        recon = patches.new_zeros(REFINE_STEPS + 1, b, N_PATCH, PATCH_DIM)
        recon[0] = self.dec_pred(h)
        for t in range(REFINE_STEPS):
            gate_logits, correction = self.refine(torch.cat([h, recon[t]], -1)).chunk(2, -1)
            gate = torch.sigmoid(gate_logits)
            recon[t + 1] = recon[t] * gate + (1 - gate) * correction

        mask = torch.ones(b, N_PATCH)
        mask[:, :n_keep] = 0
        mask = mask.gather(1, ids_restore)
        return recon, patches, mask


def masked_mse(pred, patches, mask):
    target = (patches - patches.mean(-1, keepdim=True)) / (patches.var(-1, keepdim=True) + 1e-6).sqrt()
    return (((pred - target) ** 2).mean(-1) * mask).sum() / mask.sum()


images = make_images(64)
mae = RefineMAE()
optimizer = torch.optim.AdamW(mae.parameters(), lr=2e-3, weight_decay=0.05)

for step in range(6):
    batch = images[torch.randint(0, 64, (16,))]
    recon, patches, mask = mae(batch)
    # deep supervision: every refinement step, the later ones weighted more
    loss = sum((t + 1) * masked_mse(recon[t], patches, mask) for t in range(REFINE_STEPS + 1))
    loss = loss / sum(range(1, REFINE_STEPS + 2))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}  final-step {masked_mse(recon[-1].detach(), patches, mask):.4f}")
