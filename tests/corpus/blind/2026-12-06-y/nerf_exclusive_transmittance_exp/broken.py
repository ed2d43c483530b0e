"""Coarse-to-fine NeRF on a synthetic fuzzy sphere: stratified samples for the
coarse MLP, hierarchical (inverse-CDF) samples for the fine MLP, and a hand-written
volume renderer.

Reduced from https://github.com/pytorch/pytorch/issues/41926 ("torch.exp() cannot
be modified by an inplace operation"): the author wrote into the result of
``torch.exp`` in place and got "modified by an inplace operation" at backward,
not expecting that ``exp`` saves its *output* for the gradient (most ops save
their input). The training setting is the writer's: here the renderer computes the
inclusive transmittance ``exp(-cumsum(sigma * delta))`` and then shifts it, in
place, into the exclusive transmittance NeRF needs (T_0 = 1, T_i = inclusive T_{i-1}),
which bumps the version of exp's saved output.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_RAYS, N_COARSE, N_FINE = 192, 32, 32
NEAR, FAR = 2.0, 6.0
ITERS = 20


def positional_encoding(x, n_freqs):
    out = [x]
    for i in range(n_freqs):
        out += [torch.sin((2.0 ** i) * math.pi * x), torch.cos((2.0 ** i) * math.pi * x)]
    return torch.cat(out, dim=-1)


class NeRFMLP(nn.Module):
    def __init__(self, n_freqs=4, n_dir_freqs=2, width=64):
        super().__init__()
        self.n_freqs, self.n_dir_freqs = n_freqs, n_dir_freqs
        in_pts = 3 + 6 * n_freqs
        in_dir = 3 + 6 * n_dir_freqs
        self.trunk = nn.Sequential(nn.Linear(in_pts, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU())
        self.sigma_head = nn.Linear(width, 1)
        self.rgb_head = nn.Sequential(nn.Linear(width + in_dir, width // 2), nn.ReLU(), nn.Linear(width // 2, 3))

    def forward(self, pts, dirs):
        h = self.trunk(positional_encoding(pts, self.n_freqs))
        sigma = F.softplus(self.sigma_head(h)).squeeze(-1)
        d = positional_encoding(dirs, self.n_dir_freqs)
        rgb = torch.sigmoid(self.rgb_head(torch.cat([h, d], dim=-1)))
        return rgb, sigma


def volume_render(rgb, sigma, z_vals):
    delta = z_vals[..., 1:] - z_vals[..., :-1]
    delta = torch.cat([delta, torch.full_like(delta[..., :1], 1e10)], dim=-1)
    tau = sigma * delta
    trans = torch.exp(-torch.cumsum(tau, dim=-1))
    # exclusive transmittance: light reaching sample i has passed samples 0..i-1 only
    trans[..., 1:] = trans[..., :-1].clone()
    trans[..., 0] = 1.0
    alpha = 1.0 - torch.exp(-tau)
    weights = alpha * trans
    color = (weights.unsqueeze(-1) * rgb).sum(dim=-2)
    return color, weights


def stratified_samples(n_rays, n_samples):
    t = torch.linspace(0.0, 1.0, n_samples + 1)
    lower, upper = t[:-1], t[1:]
    u = torch.rand(n_rays, n_samples)
    return NEAR + (FAR - NEAR) * (lower + (upper - lower) * u)


def sample_pdf(bins, weights, n_samples):
    weights = weights + 1e-5
    pdf = weights / weights.sum(dim=-1, keepdim=True)
    cdf = torch.cat([torch.zeros_like(pdf[..., :1]), torch.cumsum(pdf, dim=-1)], dim=-1)
    u = torch.rand(*cdf.shape[:-1], n_samples)
    idx = torch.searchsorted(cdf, u, right=True).clamp(1, cdf.shape[-1] - 1)
    cdf_lo, cdf_hi = cdf.gather(-1, idx - 1), cdf.gather(-1, idx)
    bin_lo, bin_hi = bins.gather(-1, idx - 1), bins.gather(-1, idx)
    frac = (u - cdf_lo) / (cdf_hi - cdf_lo).clamp_min(1e-5)
    return bin_lo + frac * (bin_hi - bin_lo)


def ground_truth_field(pts, dirs):
    """A fuzzy sphere of radius 1 whose colour depends on position."""
    r = pts.norm(dim=-1)
    sigma = 8.0 * torch.sigmoid(10.0 * (1.0 - r))
    rgb = 0.5 + 0.5 * torch.tanh(pts)
    return rgb, sigma


def make_rays(n):
    origins = F.normalize(torch.randn(n, 3), dim=-1) * 4.0
    target = 0.5 * torch.randn(n, 3)
    dirs = F.normalize(target - origins, dim=-1)
    return origins, dirs


def render_rays(model, origins, dirs, z_vals):
    pts = origins[:, None, :] + dirs[:, None, :] * z_vals[..., None]
    rgb, sigma = model(pts, dirs[:, None, :].expand_as(pts))
    return volume_render(rgb, sigma, z_vals)


coarse = NeRFMLP()
fine = NeRFMLP()
optimizer = torch.optim.Adam(list(coarse.parameters()) + list(fine.parameters()), lr=5e-3)

for it in range(ITERS):
    origins, dirs = make_rays(N_RAYS)
    z_coarse = stratified_samples(N_RAYS, N_COARSE)
    with torch.no_grad():
        z_dense = torch.linspace(NEAR, FAR, 128).expand(N_RAYS, 128)
        target, _ = render_rays(ground_truth_field, origins, dirs, z_dense)

    color_c, weights_c = render_rays(coarse, origins, dirs, z_coarse)
    mids = 0.5 * (z_coarse[..., 1:] + z_coarse[..., :-1])
    z_extra = sample_pdf(mids, weights_c[..., 1:-1].detach(), N_FINE)
    z_fine, _ = torch.sort(torch.cat([z_coarse, z_extra], dim=-1), dim=-1)
    color_f, _ = render_rays(fine, origins, dirs, z_fine)

    loss = F.mse_loss(color_c, target) + F.mse_loss(color_f, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if it % 10 == 0:
        psnr = -10.0 * torch.log10(F.mse_loss(color_f, target)).item()
        print(f"iter {it:3d}  loss {loss.item():.4f}  fine PSNR {psnr:.2f}")
