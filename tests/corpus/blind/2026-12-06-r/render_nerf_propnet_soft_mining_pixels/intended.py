"""NeRF with a proposal network (nerfacc-style) trained with soft mining of pixels (Langevin Monte Carlo).

Reduced from https://github.com/ubc-vision/nf-soft-mining/issues/1: the author
runs the soft-mining example ``train_ngp_nerf_prop.py`` (``--sampling_type
lmc``) with ``proposal_requires_grad`` on. Training pixels are continuous 2-D
positions that require grad: their rays and target colours are built from
them, and after each step the gradient of the loss with respect to these
positions moves the samples for the next batch. A proposal network gives
the sampling density along each ray; ``PropNetEstimator`` keeps its own
optimizer and updates the proposal network every step against the radiance
field's weights; the radiance field has the main optimizer. Here: one
synthetic 16x16 image, a pinhole camera, small MLPs, CPU.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

H = W = 16
FOCAL = 20.0
NEAR, FAR = 2.0, 6.0
NUM_PROP_SAMPLES, NUM_SAMPLES = 16, 8


class MLP(nn.Module):
    def __init__(self, in_dim, out_dim, width=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, out_dim))

    def forward(self, x):
        return self.net(x)


class ProposalNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP(3, 1, width=16)

    def forward(self, positions):
        return F.softplus(self.mlp(positions)).squeeze(-1)


class RadianceField(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = MLP(3, 17)
        self.rgb_head = MLP(16 + 3, 3, width=16)

    def forward(self, positions, dirs):
        h = self.base(positions)
        sigmas = F.softplus(h[..., 0])
        rgbs = torch.sigmoid(self.rgb_head(torch.cat([h[..., 1:], dirs], -1)))
        return rgbs, sigmas


def render_weights(t_starts, t_ends, sigmas):
    deltas = t_ends - t_starts
    alphas = 1.0 - torch.exp(-sigmas * deltas)
    trans = torch.cumprod(torch.cat([torch.ones_like(alphas[:, :1]), 1.0 - alphas + 1e-10], -1), -1)[:, :-1]
    return alphas * trans, trans


class PropNetEstimator:
    """Samples along rays from the proposal density and trains the proposal network to bound the fine weights."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.prop_cache = []

    def sampling(self, prop_sigma_fn, n_rays, requires_grad):
        edges = torch.linspace(NEAR, FAR, NUM_PROP_SAMPLES + 1).expand(n_rays, -1)
        t_starts, t_ends = edges[:, :-1], edges[:, 1:]
        with torch.set_grad_enabled(requires_grad):
            sigmas = prop_sigma_fn(t_starts, t_ends)
            weights, _ = render_weights(t_starts, t_ends, sigmas)
        if requires_grad:
            self.prop_cache.append((edges, weights))
        with torch.no_grad():  # inverse-CDF resampling, evenly spaced quantiles
            pdf = weights.detach() + 1e-5
            cdf = torch.cat([torch.zeros_like(pdf[:, :1]), torch.cumsum(pdf / pdf.sum(-1, keepdim=True), -1)], -1)
            u = torch.linspace(0.0, 1.0, NUM_SAMPLES + 1).expand(n_rays, -1).contiguous()
            idx = torch.searchsorted(cdf, u, right=True).clamp(1, NUM_PROP_SAMPLES)
            c0, c1 = cdf.gather(1, idx - 1), cdf.gather(1, idx)
            e0, e1 = edges.gather(1, idx - 1), edges.gather(1, idx)
            t = e0 + (u - c0) / (c1 - c0).clamp(min=1e-6) * (e1 - e0)
        return t[:, :-1], t[:, 1:]

    def compute_loss(self, fine_t_starts, fine_weights):
        edges, prop_weights = self.prop_cache.pop()
        fine_weights = fine_weights.detach()
        mids = fine_t_starts.detach().clamp(NEAR, FAR - 1e-4)
        bins = torch.bucketize(mids, edges[0], right=True) - 1
        binned = torch.zeros_like(prop_weights).scatter_add(1, bins, fine_weights)
        return F.relu(binned - prop_weights).pow(2).sum(-1).mean()

    def update_every_n_steps(self, extras, requires_grad, loss_scaler=1.0):
        if not requires_grad:
            return 0.0
        prop_loss = self.compute_loss(extras["t_starts"], extras["weights"]) * loss_scaler
        self.optimizer.zero_grad()
        prop_loss.backward()
        self.optimizer.step()
        return prop_loss.item()


class SoftMiningDataset:
    """Pixels as continuous 2-D positions moved by Langevin steps on the previous loss gradient."""

    def __init__(self, image, c2w, num_rays=64):
        self.image = image  # (3, H, W)
        self.c2w = c2w
        self.num_rays = num_rays
        self.points = torch.rand(num_rays, 2) * torch.tensor([W - 1.0, H - 1.0])

    def sample(self, net_grad=None, step_size=2.0, noise=0.5):
        with torch.no_grad():
            if net_grad is not None:
                self.points += step_size * net_grad / (net_grad.norm(dim=-1, keepdim=True) + 1e-8)
                self.points += noise * torch.randn_like(self.points)
                self.points.clamp_(min=torch.zeros(2), max=torch.tensor([W - 1.0, H - 1.0]))
        points_2d = self.points.clone().requires_grad_(True)
        x, y = points_2d[:, 0], points_2d[:, 1]
        dirs = torch.stack([(x - W / 2) / FOCAL, -(y - H / 2) / FOCAL, -torch.ones_like(x)], -1)
        dirs = dirs @ self.c2w[:3, :3].T
        viewdirs = dirs / dirs.norm(dim=-1, keepdim=True)
        origins = self.c2w[:3, 3].expand_as(viewdirs)
        grid = torch.stack([x / (W - 1) * 2 - 1, y / (H - 1) * 2 - 1], -1).view(1, 1, -1, 2)
        pixels = F.grid_sample(self.image[None], grid, align_corners=True)[0, :, 0].T
        return {"points_2d": points_2d, "origins": origins, "viewdirs": viewdirs, "pixels": pixels}


def render_image_with_propnet(radiance_field, proposal_network, estimator, rays, render_bkgd, proposal_requires_grad):
    origins, viewdirs = rays["origins"], rays["viewdirs"]

    def prop_sigma_fn(t_starts, t_ends):
        t_origins = origins[..., None, :]
        t_dirs = viewdirs[..., None, :].detach()
        positions = t_origins + t_dirs * (t_starts + t_ends)[..., None] / 2.0
        return proposal_network(positions)

    t_starts, t_ends = estimator.sampling(prop_sigma_fn, origins.shape[0], proposal_requires_grad)
    positions = origins[..., None, :] + viewdirs[..., None, :] * ((t_starts + t_ends) / 2.0)[..., None]
    rgbs, sigmas = radiance_field(positions, viewdirs[..., None, :].expand_as(positions))
    weights, trans = render_weights(t_starts, t_ends, sigmas)
    rgb = (weights[..., None] * rgbs).sum(-2)
    acc = weights.sum(-1, keepdim=True)
    rgb = rgb + render_bkgd * (1.0 - acc)
    return rgb, acc, {"t_starts": t_starts, "weights": weights, "trans": trans}


def proposal_requires_grad_fn(step):
    return step < 100 or step % 4 == 0


def main():
    yy, xx = torch.meshgrid(torch.linspace(0, 1, H), torch.linspace(0, 1, W), indexing="ij")
    image = torch.stack([xx, yy, 0.5 * (xx + yy)])
    c2w = torch.eye(4)
    c2w[2, 3] = 4.0
    train_dataset = SoftMiningDataset(image, c2w)

    radiance_field = RadianceField()
    proposal_network = ProposalNetwork()
    prop_optimizer = torch.optim.Adam(proposal_network.parameters(), lr=1e-2, eps=1e-15)
    estimator = PropNetEstimator(prop_optimizer)
    optimizer = torch.optim.Adam(radiance_field.parameters(), lr=1e-2, eps=1e-15)
    render_bkgd = torch.ones(3)

    gradval = None
    for step in range(30):
        data = train_dataset.sample(net_grad=gradval)
        pixels = data["pixels"]

        proposal_requires_grad = proposal_requires_grad_fn(step)
        rgb, acc, extras = render_image_with_propnet(
            radiance_field, proposal_network, estimator, data, render_bkgd, proposal_requires_grad
        )
        estimator.update_every_n_steps(extras, proposal_requires_grad, loss_scaler=1024)

        loss_per_pix = F.smooth_l1_loss(rgb, pixels, reduction="none").mean(-1)
        imp_loss = torch.abs(rgb - pixels).mean(-1).detach()
        correction = (1.0 / imp_loss.clamp(min=1e-4)).pow(min(step / 1000, 0.5))
        correction = correction.clamp(min=0.2, max=(correction.mean() + correction.std()).item())
        loss = (loss_per_pix * correction).mean()

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        with torch.no_grad():
            gradval = data["points_2d"].grad.detach() / (loss_per_pix.detach()[:, None] + 1e-8)

        if step % 10 == 0:
            psnr = -10.0 * torch.log10(F.mse_loss(rgb, pixels))
            print(f"step={step} | loss={loss.item():.5f} | psnr={psnr.item():.2f}")


if __name__ == "__main__":
    main()
