"""Deblurring NeRF (DP-NeRF style): sample points are warped by a learned rigid-body motion per ray.

Source: https://github.com/dogyoonlee/DP-NeRF/issues/2 "loss.backward() error"
(same report as https://github.com/dogyoonlee/DP-NeRF/issues/4).
The author trained DP-NeRF on blurry images; its rigid blurring kernel predicts a rotation and a
translation per ray and warps the ray's sample points with an SE(3) exponential map
(``utils/rigid_warping.py``) before volume rendering.
Reduced: a tiny NeRF MLP, 2 kernel motions, random rays and colours.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SE3Field:
    """warp the given points with rotation(r) and translation(v) value."""

    def __init__(self):
        super().__init__()
        self.rigid_body = Rigid_body()

    def warp(self, pts, rot, trans):
        theta = torch.linalg.norm(rot, axis=-1)  # N_rays*N_samples
        theta += 1.0e-10
        rot = rot / theta.unsqueeze(-1)  # N_rays*N_samples x 3
        trans = trans / theta.unsqueeze(-1)  # N_rays*N_samples x 3
        screw_axis = torch.cat([rot, trans], axis=-1)  # N_rays*N_samples x 6
        transform = self.rigid_body.exp_se3(screw_axis, theta)  # N_rays*N_samples x 4 x 4
        warped_pts = torch.matmul(transform, self.rigid_body.to_homogenous(pts)[..., None]).squeeze(-1)
        warped_pts = self.rigid_body.from_homogenous(warped_pts)
        return warped_pts


class Rigid_body:
    def __init__(self):
        super().__init__()

    def exp_se3(self, S, theta):
        w, v = torch.split(S, [3, 3], dim=-1)
        W = self.skew(w)
        R = self.exp_so3(w, theta)
        theta = theta[..., None, None]
        p = torch.matmul(
            (
                theta * torch.eye(3)[None, ...]
                + (1.0 - torch.cos(theta)) * W
                + (theta - torch.sin(theta)) * torch.matmul(W, W)
            ),
            v[..., None],
        )
        return self.rp_to_se3(R, p)

    def exp_so3(self, w, theta):
        W = self.skew(w)
        theta = theta[..., None, None]
        return torch.eye(3)[None, ...] + torch.sin(theta) * W + (1.0 - torch.cos(theta)) * torch.matmul(W, W)

    def skew(self, w):
        w_new = torch.zeros_like(w).unsqueeze(1).repeat(1, 3, 1)
        w_re = torch.reshape(w_new, (w.shape[0], 9))
        w_re[..., 1] = -w[..., 2]
        w_re[..., 2] = w[..., 1]
        w_re[..., 3] = w[..., 2]
        w_re[..., 5] = -w[..., 0]
        w_re[..., 6] = -w[..., 1]
        w_re[..., 7] = w[..., 0]
        return w_re.reshape((w.shape[0], 3, 3))

    def rp_to_se3(self, R, p):
        RT_mat = torch.cat([R, p], -1)
        filling_mat = torch.tensor([0.0, 0.0, 0.0, 1.0])[None, None, ...].repeat(RT_mat.shape[0], 1, 1)
        return torch.cat([RT_mat, filling_mat], dim=-2)

    def to_homogenous(self, v):
        return torch.cat([v, torch.ones_like(v[..., :1])], axis=-1)

    def from_homogenous(self, v):
        return v[..., :3] / v[..., -1:]


class NeRF(nn.Module):
    def __init__(self, n_freqs=4, width=32):
        super().__init__()
        self.n_freqs = n_freqs
        self.mlp = nn.Sequential(
            nn.Linear(3 + 6 * n_freqs, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 4)
        )

    def forward(self, pts):
        enc = [pts] + [f(pts * 2.0**k) for k in range(self.n_freqs) for f in (torch.sin, torch.cos)]
        out = self.mlp(torch.cat(enc, dim=-1))
        return torch.sigmoid(out[..., :3]), F.relu(out[..., 3])


class RigidBlurringKernel(nn.Module):
    """Predicts, for every training image, num_motion rigid motions (rotation, translation)."""

    def __init__(self, num_img, num_motion=2, width=16):
        super().__init__()
        self.num_motion = num_motion
        self.img_embed = nn.Embedding(num_img, width)
        self.motion = nn.Linear(width, num_motion * 6)
        self.weights = nn.Linear(width, num_motion + 1)
        self.se3 = SE3Field()

    def forward(self, pts, img_idx):
        n_rays, n_samples, _ = pts.shape
        h = self.img_embed(img_idx)
        motion = 0.01 * self.motion(h).view(n_rays, self.num_motion, 6)
        warped = [pts]
        for m in range(self.num_motion):
            rot = motion[:, m, :3, None].expand(n_rays, 3, n_samples).transpose(1, 2).reshape(-1, 3)
            trans = motion[:, m, 3:, None].expand(n_rays, 3, n_samples).transpose(1, 2).reshape(-1, 3)
            warped.append(self.se3.warp(pts.reshape(-1, 3), rot, trans).view(n_rays, n_samples, 3))
        return torch.stack(warped, 0), torch.softmax(self.weights(h), dim=-1)


def render_rays(model, pts, z_vals):
    rgb, sigma = model(pts)
    dists = torch.cat([z_vals[..., 1:] - z_vals[..., :-1], torch.full_like(z_vals[..., :1], 1e10)], -1)
    alpha = 1.0 - torch.exp(-sigma * dists)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[..., :1]), 1.0 - alpha + 1e-10], -1), -1)[..., :-1]
    weights = alpha * trans
    return (weights[..., None] * rgb).sum(dim=-2)


def train():
    torch.manual_seed(0)
    num_img, n_rays, n_samples = 4, 32, 8
    model = NeRF()
    rbk = RigidBlurringKernel(num_img)
    grad_vars = list(model.parameters()) + list(rbk.parameters())
    optimizer = torch.optim.Adam(params=grad_vars, lr=5e-4, betas=(0.9, 0.999))

    for i in range(5):
        img_idx = torch.randint(0, num_img, (n_rays,))
        rays_o = torch.randn(n_rays, 3) * 0.1
        rays_d = F.normalize(torch.randn(n_rays, 3), dim=-1)
        z_vals = torch.linspace(2.0, 6.0, n_samples).expand(n_rays, n_samples)
        pts = rays_o[:, None, :] + rays_d[:, None, :] * z_vals[..., None]
        target_s = torch.rand(n_rays, 3)

        warped_pts, ccw = rbk(pts, img_idx)
        rgbs = torch.stack([render_rays(model, p, z_vals) for p in warped_pts], -1)  # n_rays x 3 x (K+1)
        rgb = (rgbs * ccw[:, None, :]).sum(-1)

        optimizer.zero_grad()
        img_loss = F.mse_loss(rgb, target_s)
        loss = img_loss
        loss.backward()
        optimizer.step()
        print(f"[TRAIN] Iter: {i} Loss: {loss.item()}")


if __name__ == "__main__":
    train()
