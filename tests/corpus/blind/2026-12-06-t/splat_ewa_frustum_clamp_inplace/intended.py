"""3-D Gaussian splatting fitted to one synthetic view with a pure-PyTorch rasteriser.

Source: https://github.com/nerfstudio-project/gsplat/pull/59 ("no inplace operations, differentiable
now"). gsplat's pure-PyTorch reference implementation (``_torch_impl.py``) was used by the author to
train Gaussians end to end. In ``project_cov3d_ewa`` the camera-space means ``t`` were clamped to the
frustum in place, ``t[..., 0] = t[..., 2] * torch.min(lim_x, torch.max(-lim_x, t[..., 0] / t[..., 2]))``,
after ``t[..., 0] / t[..., 2]`` had saved views of ``t`` for its backward, so the loss's backward failed
with "one of the variables needed for gradient computation has been modified by an inplace operation".
The PR builds the clamped ``t`` out of place with ``torch.cat``.
"""

import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)

H = W = 16
N = 48
FX = FY = 20.0
TAN_FOVX = 0.5 * W / FX
TAN_FOVY = 0.5 * H / FY


def quat_to_rotmat(quat):
    w, x, y, z = torch.unbind(F.normalize(quat, dim=-1), dim=-1)
    return torch.stack(
        [
            torch.stack([1 - 2 * (y**2 + z**2), 2 * (x * y - w * z), 2 * (x * z + w * y)], dim=-1),
            torch.stack([2 * (x * y + w * z), 1 - 2 * (x**2 + z**2), 2 * (y * z - w * x)], dim=-1),
            torch.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x**2 + y**2)], dim=-1),
        ],
        dim=-2,
    )


def scale_rot_to_cov3d(scale, glob_scale, quat):
    R = quat_to_rotmat(quat)
    M = R * glob_scale * scale[..., None, :]
    return M @ M.transpose(-1, -2)


def project_cov3d_ewa(mean3d, cov3d, viewmat, fx, fy, tan_fovx, tan_fovy):
    Wr = viewmat[..., :3, :3]
    p = viewmat[..., :3, 3]
    t = torch.matmul(Wr, mean3d[..., None])[..., 0] + p
    lim_x = 1.3 * torch.tensor([tan_fovx])
    lim_y = 1.3 * torch.tensor([tan_fovy])
    min_lim_x = t[..., 2] * torch.min(lim_x, torch.max(-lim_x, t[..., 0] / t[..., 2]))
    min_lim_y = t[..., 2] * torch.min(lim_y, torch.max(-lim_y, t[..., 1] / t[..., 2]))
    t = torch.cat([min_lim_x[..., None], min_lim_y[..., None], t[..., 2, None]], dim=-1)
    rz = 1.0 / t[..., 2]
    rz2 = rz**2
    J = torch.stack(
        [
            torch.stack([fx * rz, torch.zeros_like(rz), -fx * t[..., 0] * rz2], dim=-1),
            torch.stack([torch.zeros_like(rz), fy * rz, -fy * t[..., 1] * rz2], dim=-1),
        ],
        dim=-2,
    )
    T = J @ Wr
    cov2d = T @ cov3d @ T.transpose(-1, -2)
    cov2d[..., 0, 0] = cov2d[..., 0, 0] + 0.3
    cov2d[..., 1, 1] = cov2d[..., 1, 1] + 0.3
    return cov2d


def project_means(mean3d, viewmat):
    t = (viewmat[:3, :3] @ mean3d.T).T + viewmat[:3, 3]
    u = FX * t[:, 0] / t[:, 2] + W / 2
    v = FY * t[:, 1] / t[:, 2] + H / 2
    return torch.stack([u, v], dim=-1), t[:, 2]


class GaussianModel(torch.nn.Module):
    NAMES = ("means", "scales", "quats", "opacities", "colors")

    def __init__(self, n):
        super().__init__()
        self.means = torch.nn.Parameter(torch.rand(n, 3) * 2 - 1)
        self.scales = torch.nn.Parameter(torch.log(torch.full((n, 3), 0.12)))
        self.quats = torch.nn.Parameter(torch.cat([torch.ones(n, 1), torch.zeros(n, 3)], dim=1))
        self.opacities = torch.nn.Parameter(torch.zeros(n))
        self.colors = torch.nn.Parameter(torch.randn(n, 3) * 0.1)

    @property
    def num_points(self):
        return self.means.shape[0]


LRS = {"means": 1e-2, "scales": 5e-3, "quats": 1e-3, "opacities": 5e-2, "colors": 2.5e-2}


def make_optimizer(gaussians):
    groups = [{"params": [getattr(gaussians, k)], "lr": LRS[k], "name": k} for k in GaussianModel.NAMES]
    return torch.optim.Adam(groups, eps=1e-15)


def rasterize(gaussians, viewmat):
    means2d, depth = project_means(gaussians.means, viewmat)
    cov3d = scale_rot_to_cov3d(torch.exp(gaussians.scales), 1.0, gaussians.quats)
    cov2d = project_cov3d_ewa(gaussians.means, cov3d, viewmat, FX, FY, TAN_FOVX, TAN_FOVY)
    conic = torch.linalg.inv(cov2d)
    order = torch.argsort(depth)
    ys, xs = torch.meshgrid(torch.arange(H) + 0.5, torch.arange(W) + 0.5, indexing="ij")
    pix = torch.stack([xs, ys], dim=-1).reshape(-1, 1, 2)
    d = pix - means2d[order][None]
    power = -0.5 * torch.einsum("pni,nij,pnj->pn", d, conic[order], d)
    alpha = torch.sigmoid(gaussians.opacities[order])[None] * torch.exp(power)
    alpha = alpha.clamp(max=0.99)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1 - alpha[:, :-1]], dim=1), dim=1)
    rgb = (alpha * trans) @ torch.sigmoid(gaussians.colors[order])
    return rgb.reshape(H, W, 3), means2d


def densify_and_prune(gaussians, grad_accum, denom, grad_thresh=0.02):
    """Clone Gaussians with large view-space gradients, prune transparent ones; new optimizer state."""
    avg = grad_accum / denom.clamp(min=1)
    with torch.no_grad():
        keep = torch.sigmoid(gaussians.opacities) > 0.005
        clone = (avg > grad_thresh) & keep
        for name in GaussianModel.NAMES:
            p = getattr(gaussians, name)
            setattr(gaussians, name, torch.nn.Parameter(torch.cat([p[keep], p[clone]], dim=0)))
    return make_optimizer(gaussians)


viewmat = torch.eye(4)
viewmat[2, 3] = 4.0
target = torch.zeros(H, W, 3)
target[4:12, 3:9, 0] = 1.0
target[6:14, 8:14, 2] = 1.0

gaussians = GaussianModel(N)
optimizer = make_optimizer(gaussians)
grad_accum = torch.zeros(N)
denom = torch.zeros(N)

for it in range(40):
    image, means2d = rasterize(gaussians, viewmat)
    means2d.retain_grad()
    l1 = (image - target).abs().mean()
    loss = l1 + 0.1 * F.mse_loss(image, target)
    optimizer.zero_grad()
    loss.backward()
    with torch.no_grad():
        grad_accum += means2d.grad.norm(dim=-1)
        denom += 1
    optimizer.step()
    if it > 0 and it % 20 == 0:
        optimizer = densify_and_prune(gaussians, grad_accum, denom)
        grad_accum = torch.zeros(gaussians.num_points)
        denom = torch.zeros(gaussians.num_points)
    if it % 10 == 0:
        print(f"iter {it} loss {loss.item():.4f} n={gaussians.num_points} psnr={-10 * math.log10(F.mse_loss(image, target).item()):.2f}")
