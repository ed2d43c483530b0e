"""Conditional flow matching with multi-scale training: the batch is prepared under torch.inference_mode.

Reduced from https://github.com/roboflow/rf-detr/issues/297 (fixed by PR #559). Training RF-DETR
failed with "Inference tensors cannot be saved for backward": with multi-scale training on,
`train_one_epoch` resized every batch to a random scale inside `with torch.inference_mode():`
(`samples.tensors = F.interpolate(...)`), and the resized images went straight into the backbone,
whose first convolution has to save its input for backward. The fix replaced
`torch.inference_mode()` with `torch.no_grad()` there. The report is an object detector; the
training setting is the writer's: a small convolutional velocity field trained by conditional
flow matching (linear path from Gaussian noise to data) on 8x8 images at a random resolution per
step, with the same data-preparation block (resize, noise, interpolation point, target velocity)
written under inference mode, and Euler ODE sampling for evaluation.

Synthetic images (Gaussian blobs), CPU.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

SCALES = (6, 8)
BATCH = 16
STEPS = 6
ODE_STEPS = 8


def make_blobs(n, size=8):
    """One Gaussian bump per image at a random centre, plus a little noise."""
    coords = torch.arange(size).float()
    cy, cx = torch.rand(n, 1, 1) * (size - 1), torch.rand(n, 1, 1) * (size - 1)
    img = torch.exp(-((coords.view(1, -1, 1) - cy) ** 2 + (coords.view(1, 1, -1) - cx) ** 2) / 3.0)
    return (2 * img - 1 + 0.05 * torch.randn(n, size, size)).unsqueeze(1)


class TimeEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("freqs", torch.exp(torch.linspace(0, 3, dim // 2)))
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t):
        angles = t.view(-1, 1) * self.freqs
        return self.mlp(torch.cat([angles.sin(), angles.cos()], dim=1))


class ResBlock(nn.Module):
    def __init__(self, ch, tdim):
        super().__init__()
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)
        self.film = nn.Linear(tdim, 2 * ch)
        self.norm = nn.GroupNorm(4, ch)

    def forward(self, h, temb):
        scale, shift = self.film(temb).chunk(2, dim=1)
        y = F.silu(self.norm(self.conv1(h)))
        y = y * (1 + scale[:, :, None, None]) + shift[:, :, None, None]
        return h + self.conv2(y)


class VelocityNet(nn.Module):
    """Fully convolutional, so it runs at any resolution."""

    def __init__(self, ch=16, tdim=16):
        super().__init__()
        self.time = TimeEmbedding(tdim)
        self.inp = nn.Conv2d(1, ch, 3, padding=1)
        self.blocks = nn.ModuleList([ResBlock(ch, tdim), ResBlock(ch, tdim)])
        self.out = nn.Conv2d(ch, 1, 3, padding=1)

    def forward(self, x, t):
        temb = self.time(t)
        h = self.inp(x)
        for block in self.blocks:
            h = block(h, temb)
        return self.out(F.silu(h))


@torch.inference_mode()
def sample(model, n, size):
    """Euler integration of dx/dt = v(x, t) from noise (t=0) to data (t=1)."""
    x = torch.randn(n, 1, size, size)
    for k in range(ODE_STEPS):
        t = torch.full((n,), k / ODE_STEPS)
        x = x + model(x, t) / ODE_STEPS
    return x


data = make_blobs(128)
model = VelocityNet()
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)

for step in range(STEPS):
    idx = torch.randint(0, len(data), (BATCH,))
    x1 = data[idx]
    scale = SCALES[torch.randint(len(SCALES), (1,)).item()]

    # batch preparation needs no gradients: resize to this step's scale, draw the path point
    with torch.inference_mode():
        x1 = F.interpolate(x1, size=scale, mode="bilinear", align_corners=False)
        x0 = torch.randn_like(x1)
        t = torch.rand(x1.shape[0])
        tt = t.view(-1, 1, 1, 1)
        xt = (1 - tt) * x0 + tt * x1
        ut = x1 - x0

    vt = model(xt, t)
    loss = F.mse_loss(vt, ut)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    if step % 3 == 2:
        samples = sample(model, 8, 8)
        print(f"step {step}: loss {loss.item():.4f}  sample mean {samples.mean().item():+.3f} std {samples.std().item():.3f}")
