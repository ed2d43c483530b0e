"""3-D shape completion: PointNet encoder of a partial scan, coarse point decoder (Chamfer) and occupancy decoder (BCE).

Reduced from pytorch/vision issue #3025 (https://github.com/pytorch/vision/issues/3025): the author
passed a tensor that requires grad to ``torchvision.utils.make_grid(..., normalize=True,
scale_each=True)``, whose normalisation walks the batch with ``for t in tensor`` and rescales each
image in place (``clamp_``, ``sub_``, ``div_``); torch raises "Output 0 of UnbindBackward0 is a view
and is being modified inplace". The training setting is the writer's: every few steps the script
logs a preview slice of the predicted occupancy field, computed in the training loop and rescaled per
shape by a make_grid-style helper before the losses are backpropagated.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_PARTIAL, N_FULL, N_COARSE, N_QUERY, RES = 128, 256, 64, 256, 12


def sample_shapes(batch):
    """Ellipsoids with random axes; the partial scan keeps the points facing +x."""
    axes = 0.4 + 0.5 * torch.rand(batch, 1, 3)
    d = F.normalize(torch.randn(batch, 4 * N_FULL, 3), dim=-1)
    surf = d * axes
    full = surf[:, :N_FULL]
    order = surf[..., 0].argsort(dim=1, descending=True)
    partial = torch.gather(surf, 1, order[:, :N_PARTIAL, None].expand(-1, -1, 3))
    queries = torch.rand(batch, N_QUERY, 3) * 2 - 1
    occ = ((queries / axes) ** 2).sum(-1) < 1
    return partial, full, queries, occ.float(), axes


class PointNetEncoder(nn.Module):
    def __init__(self, dim=128):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, dim))

    def forward(self, pts):
        return self.mlp(pts).max(1).values


class CoarseDecoder(nn.Module):
    def __init__(self, dim=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, N_COARSE * 3))

    def forward(self, code):
        return self.net(code).view(-1, N_COARSE, 3)


class OccupancyDecoder(nn.Module):
    def __init__(self, dim=128):
        super().__init__()
        self.inp = nn.Linear(3, 128)
        self.cond = nn.Linear(dim, 128)
        self.out = nn.Sequential(nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, code, xyz):
        return self.out(self.inp(xyz) + self.cond(code).unsqueeze(1)).squeeze(-1)


def chamfer(a, b):
    d = torch.cdist(a, b)
    return d.min(2).values.pow(2).mean() + d.min(1).values.pow(2).mean()


def normalize_for_display(images, eps=1e-5):
    """make_grid(normalize=True, scale_each=True): rescale every image to [0, 1] in place."""
    for img in images:
        lo, hi = float(img.min()), float(img.max())
        img.clamp_(min=lo, max=hi)
        img.sub_(lo).div_(max(hi - lo, eps))
    return images


lin = torch.linspace(-1, 1, RES)
gy, gz = torch.meshgrid(lin, lin, indexing="ij")
preview_grid = torch.stack([torch.zeros_like(gy), gy, gz], -1).view(1, RES * RES, 3)

encoder, coarse_decoder, occ_decoder = PointNetEncoder(), CoarseDecoder(), OccupancyDecoder()
params = list(encoder.parameters()) + list(coarse_decoder.parameters()) + list(occ_decoder.parameters())
optimizer = torch.optim.Adam(params, lr=1e-3)

for step in range(4):
    partial, full, queries, occ, _ = sample_shapes(4)
    code = encoder(partial)
    coarse = coarse_decoder(code)
    logits = occ_decoder(code, queries)
    chamfer_loss = chamfer(coarse, full)
    occ_loss = F.binary_cross_entropy_with_logits(logits, occ)
    if step % 3 == 0:
        preview = torch.sigmoid(occ_decoder(code, preview_grid.expand(len(code), -1, -1))).view(-1, RES, RES)
        preview = normalize_for_display(preview.detach().clone())
        print(f"step {step}: preview slice mean {preview.mean().item():.3f}")
    loss = occ_loss + 10.0 * chamfer_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: occupancy BCE {occ_loss.item():.4f}, chamfer {chamfer_loss.item():.5f}")
