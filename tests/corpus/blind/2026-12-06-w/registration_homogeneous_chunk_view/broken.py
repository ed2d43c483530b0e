"""Unsupervised 2-D image registration with a hand-written spatial transformer: an in-place write into a chunk's view.

Reduced from https://github.com/kail8/UnsupDIS-pytorch/issues/26 . Training the unsupervised
deep-image-stitching model, the author got "Output 0 of ViewBackward is a view and is being
modified inplace. This view is an output of a function that returns multiple views." The
homography spatial transformer multiplies the homogeneous grid by the predicted 3x3 matrix, splits
the result with `torch.chunk` into x_s, y_s and the denominator t_s, flattens t_s with
`reshape(-1)` (a view when the batch holds one pair) and guards the division with an in-place
masked write, `t_s_flat[t_s_flat.abs() < eps] = eps`. The answer in the thread replaces the write
with a blend through a detached mask, which the author confirmed fixed it. The report is image
stitching; the training setting is the writer's: a VoxelMorph-style registration network for
pairs of 2-D slices, one pair per step as VoxelMorph trains, predicting a global projective
pre-alignment and a dense displacement field, warped by the same homogeneous-coordinate
transformer, trained with an image similarity loss plus a gradient smoothness penalty on the
displacement.

Synthetic 16x16 "slices" (an ellipse and a blob, the moving one deformed), CPU.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

SIZE = 16
STEPS = 6
LAMBDA_SMOOTH = 0.05


def identity_grid(height, width):
    """Homogeneous (x_t, y_t, 1) coordinates of every output pixel, in [-1, 1], shape [3, H*W]."""
    y_t, x_t = torch.meshgrid(torch.linspace(-1, 1, height), torch.linspace(-1, 1, width), indexing="ij")
    return torch.stack([x_t.reshape(-1), y_t.reshape(-1), torch.ones(height * width)])


def make_pair():
    """A fixed slice and a moving slice made from it by a random small affine map and a smooth bump."""
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, SIZE), torch.linspace(-1, 1, SIZE), indexing="ij")
    a, b = 0.5 + 0.2 * torch.rand(2)
    fixed = ((xx / a) ** 2 + (yy / b) ** 2 < 1).float() * 0.8
    fixed = fixed + torch.exp(-((xx - 0.3) ** 2 + (yy + 0.2) ** 2) / 0.05)
    fixed = fixed.view(1, 1, SIZE, SIZE)
    theta = torch.eye(2, 3) + 0.08 * torch.randn(2, 3)
    grid = F.affine_grid(theta.unsqueeze(0), (1, 1, SIZE, SIZE), align_corners=True)
    grid = grid + 0.05 * torch.sin(3 * grid.flip(-1))
    moving = F.grid_sample(fixed, grid, align_corners=True)
    return moving, fixed


class ConvBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)

    def forward(self, x):
        return F.leaky_relu(self.conv(x), 0.2)


class RegNet(nn.Module):
    """VoxelMorph-style encoder/decoder on the stacked pair, with a global projective head."""

    def __init__(self, ch=16):
        super().__init__()
        self.enc1 = ConvBlock(2, ch)
        self.enc2 = ConvBlock(ch, ch, stride=2)
        self.dec = ConvBlock(2 * ch, ch)
        self.flow = nn.Conv2d(ch, 2, 3, padding=1)
        nn.init.normal_(self.flow.weight, std=1e-5)
        nn.init.zeros_(self.flow.bias)
        self.homography = nn.Linear(ch, 8)
        nn.init.zeros_(self.homography.weight)
        nn.init.zeros_(self.homography.bias)

    def forward(self, moving, fixed):
        x1 = self.enc1(torch.cat([moving, fixed], dim=1))
        x2 = self.enc2(x1)
        up = F.interpolate(x2, scale_factor=2, mode="nearest")
        h = self.dec(torch.cat([up, x1], dim=1))
        flow = self.flow(h)
        delta = self.homography(x2.mean(dim=(2, 3))) * 0.1
        H = torch.cat([delta, torch.zeros(delta.shape[0], 1)], dim=1).view(-1, 3, 3) + torch.eye(3)
        return H, flow


class SpatialTransformer(nn.Module):
    """Warps `src` by x -> H x (in homogeneous coordinates) followed by a dense displacement."""

    def __init__(self, height, width):
        super().__init__()
        self.height, self.width = height, width
        self.register_buffer("grid", identity_grid(height, width))

    def forward(self, src, H, flow):
        bs = src.shape[0]
        T_g = torch.bmm(H, self.grid.unsqueeze(0).expand(bs, -1, -1))
        x_s, y_s, t_s = torch.chunk(T_g, 3, dim=1)
        t_s_flat = t_s.reshape(-1)
        eps = 1e-2
        t_s_flat[t_s_flat.abs() < eps] = eps
        x_s_flat = x_s.reshape(-1) / t_s_flat
        y_s_flat = y_s.reshape(-1) / t_s_flat
        sample_grid = torch.stack([x_s_flat, y_s_flat], dim=-1).view(bs, self.height, self.width, 2)
        sample_grid = sample_grid + flow.permute(0, 2, 3, 1)
        return F.grid_sample(src, sample_grid, align_corners=True)


def smoothness_loss(flow):
    """VoxelMorph's Grad('l2') penalty on the displacement field."""
    dy = flow[:, :, 1:, :] - flow[:, :, :-1, :]
    dx = flow[:, :, :, 1:] - flow[:, :, :, :-1]
    return (dx ** 2).mean() + (dy ** 2).mean()


pairs = [make_pair() for _ in range(8)]
model = RegNet()
transformer = SpatialTransformer(SIZE, SIZE)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(STEPS):
    moving, fixed = pairs[step % len(pairs)]
    H, flow = model(moving, fixed)
    warped = transformer(moving, H, flow)
    sim_loss = F.mse_loss(warped, fixed)
    smooth_loss = smoothness_loss(flow)
    loss = sim_loss + LAMBDA_SMOOTH * smooth_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 3 == 2:
        with torch.no_grad():
            before = F.mse_loss(moving, fixed).item()
        print(f"step {step}: similarity {sim_loss.item():.4f} (unregistered {before:.4f})  smooth {smooth_loss.item():.2e}")
