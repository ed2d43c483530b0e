"""Intended: video frame interpolation, bidirectional flow estimation, backward warping and mask blending.

The script of broken.py corrected as the fix in https://github.com/sunlicai/MAE-DFER/issues/15 does: each
flow direction is read from the decoder's output with ``.clone()`` before it is refined, so the refiner's
first convolution saves a tensor of its own and writing the refined flow back into the output's channels
no longer changes what the convolution saved. Same seeds, data and order of random draws.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

H = W = 32


def smooth_texture(n):
    """Low-pass random textures, one channel, values in [0, 1]."""
    tex = F.avg_pool2d(torch.rand(n, 1, H + 8, W + 8), 5, stride=1)[:, :, :H, :W]
    return (tex - tex.amin(dim=(2, 3), keepdim=True)) / (tex.amax(dim=(2, 3), keepdim=True) - tex.amin(dim=(2, 3), keepdim=True))


def make_triplets(n):
    """Frame 0, the middle frame and frame 1 of a texture translating at a constant speed (periodic)."""
    tex = smooth_texture(n)
    shifts = torch.randint(-3, 4, (n, 2))
    f0 = torch.stack([torch.roll(t, (-int(dy), -int(dx)), dims=(1, 2)) for t, (dy, dx) in zip(tex, shifts)])
    f1 = torch.stack([torch.roll(t, (int(dy), int(dx)), dims=(1, 2)) for t, (dy, dx) in zip(tex, shifts)])
    return f0, tex, f1


def backward_warp(img, flow):
    """Sample img at (x + u, y + v)."""
    ys, xs = torch.meshgrid(torch.arange(H, dtype=torch.float32), torch.arange(W, dtype=torch.float32), indexing="ij")
    gx = 2 * (xs + flow[:, 0]) / (W - 1) - 1
    gy = 2 * (ys + flow[:, 1]) / (H - 1) - 1
    return F.grid_sample(img, torch.stack([gx, gy], dim=-1), align_corners=True, padding_mode="border")


class FlowDecoder(nn.Module):
    """Coarse bidirectional flow and a blending mask at half resolution, then per-direction refinement."""

    def __init__(self, ch=32):
        super().__init__()
        self.encode = nn.Sequential(
            nn.Conv2d(2, ch, 3, stride=2, padding=1), nn.LeakyReLU(0.1),
            nn.Conv2d(ch, ch, 3, padding=1), nn.LeakyReLU(0.1),
            nn.Conv2d(ch, 5, 3, padding=1),
        )
        self.refine_fwd = nn.Sequential(nn.Conv2d(2, 16, 3, padding=1), nn.LeakyReLU(0.1), nn.Conv2d(16, 2, 3, padding=1))
        self.refine_bwd = nn.Sequential(nn.Conv2d(2, 16, 3, padding=1), nn.LeakyReLU(0.1), nn.Conv2d(16, 2, 3, padding=1))

    def forward(self, f0, f1):
        up = F.interpolate(self.encode(torch.cat([f0, f1], dim=1)), scale_factor=2, mode="bilinear", align_corners=False)
        out = torch.cat([2.0 * up[:, :4], up[:, 4:]], dim=1)  # flows are in pixels of the full resolution
        fwd = out[:, 0:2].clone()  # the refiner's conv keeps its input: read the slot as a copy, as the thread's fix does
        fwd = fwd + self.refine_fwd(fwd)
        out[:, 0:2] = fwd
        bwd = out[:, 2:4].clone()
        bwd = bwd + self.refine_bwd(bwd)
        out[:, 2:4] = bwd
        return out[:, 0:2], out[:, 2:4], torch.sigmoid(out[:, 4:5])


def interpolate_middle(model, f0, f1, t=0.5):
    flow01, flow10, mask = model(f0, f1)
    flow_t0 = -(1 - t) * t * flow01 + t * t * flow10
    flow_t1 = (1 - t) * (1 - t) * flow01 - t * (1 - t) * flow10
    pred = mask * backward_warp(f0, flow_t0) + (1 - mask) * backward_warp(f1, flow_t1)
    return pred, flow01, flow10


def total_variation(flow):
    return (flow[:, :, 1:] - flow[:, :, :-1]).abs().mean() + (flow[:, :, :, 1:] - flow[:, :, :, :-1]).abs().mean()


frames0, middles, frames1 = make_triplets(32)
model = FlowDecoder()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)

for epoch in range(3):
    perm = torch.randperm(32)
    for start in range(0, 32, 8):
        idx = perm[start:start + 8]
        pred, flow01, flow10 = interpolate_middle(model, frames0[idx], frames1[idx])
        rec_loss = (pred - middles[idx]).abs().mean()
        smooth_loss = total_variation(flow01) + total_variation(flow10)
        loss = rec_loss + 0.01 * smooth_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    psnr = -10 * torch.log10(((pred.detach().clamp(0, 1) - middles[idx]) ** 2).mean())
    print(f"epoch {epoch}: L1 {rec_loss.item():.4f} smooth {smooth_loss.item():.4f} PSNR {psnr.item():.2f} dB")
