"""Instant-NGP-style NeRF training with camera extrinsics optimisation.

Reduced from https://github.com/kwea123/ngp_pl/issues/100: training ngp_pl's `NeRFSystem` with
`--optimize_ext` (a learnable rotation `dR` and translation `dT` per training image, refining the
camera poses with their own Adam) and `--ray_sampling_strategy same_image` (every batch draws its rays
from one randomly chosen training image), in mixed precision as the repository's trainer runs. The hash
grid is replaced here by a small MLP on positional encodings; the ray sampling, the pose refinement and
the volume rendering follow the repository's code.
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

np.random.seed(0)
torch.manual_seed(0)

N_IMAGES = 4
IMG_WH = (6, 6)
BATCH_SIZE = 32
N_SAMPLES = 8
NEAR, FAR = 1.0, 3.0


def axisangle_to_R(v):
    """Rodrigues' formula: (N, 3) or (3,) axis-angle vectors to rotation matrices."""
    zero = torch.zeros_like(v[..., :1])
    skew = torch.cat([zero, -v[..., 2:3], v[..., 1:2], v[..., 2:3], zero, -v[..., 0:1],
                      -v[..., 1:2], v[..., 0:1], zero], -1).reshape(*v.shape[:-1], 3, 3)
    skew2 = skew @ skew
    angle = v.norm(dim=-1, keepdim=True)[..., None] + 1e-7
    eye = torch.eye(3).expand_as(skew)
    return eye + torch.sin(angle) / angle * skew + (1 - torch.cos(angle)) / angle**2 * skew2


def get_rays(directions, c2w):
    """Ray origins and directions in world coordinates; c2w is (3, 4) or (N, 3, 4)."""
    if c2w.ndim == 2:
        rays_d = directions @ c2w[:, :3].T
    else:
        rays_d = (directions[:, None, :] @ c2w[..., :3].transpose(-1, -2)).squeeze(1)
    rays_o = c2w[..., 3].expand_as(rays_d)
    return rays_o, rays_d


class SyntheticScene(Dataset):
    """Posed images of a synthetic scene; in training, __getitem__ samples a batch of rays."""

    def __init__(self):
        w, h = IMG_WH
        i, j = torch.meshgrid(torch.arange(w, dtype=torch.float32), torch.arange(h, dtype=torch.float32), indexing="xy")
        self.directions = torch.stack([(i - w / 2) / w, -(j - h / 2) / h, -torch.ones_like(i)], -1).reshape(-1, 3)
        angles = 0.3 * torch.randn(N_IMAGES, 3)
        self.poses = torch.cat([axisangle_to_R(angles), 2.0 * torch.randn(N_IMAGES, 3, 1) * 0.1 + torch.tensor([[[0.0], [0.0], [2.0]]])], -1)
        self.rays = torch.rand(N_IMAGES, w * h, 3)
        self.batch_size = BATCH_SIZE
        self.ray_sampling_strategy = "same_image"

    def __len__(self):
        return 1000

    def __getitem__(self, idx):
        if self.ray_sampling_strategy == "all_images":  # randomly select images
            img_idxs = np.random.choice(len(self.poses), self.batch_size)
        elif self.ray_sampling_strategy == "same_image":  # randomly select ONE image
            img_idxs = np.random.choice(len(self.poses), 1)
        pix_idxs = np.random.choice(IMG_WH[0] * IMG_WH[1], self.batch_size)
        rays = self.rays[img_idxs, pix_idxs]
        return {"img_idxs": img_idxs, "pix_idxs": pix_idxs, "rgb": rays[:, :3]}


class NGP(nn.Module):
    def __init__(self, n_freqs=4, hidden=32):
        super().__init__()
        self.register_buffer("freqs", 2.0 ** torch.arange(n_freqs))
        in_dim = 3 + 6 * n_freqs
        self.sigma_net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, 1 + hidden))
        self.rgb_net = nn.Sequential(nn.Linear(hidden + 3, hidden), nn.ReLU(), nn.Linear(hidden, 3), nn.Sigmoid())

    def encode(self, x):
        xf = x[..., None] * self.freqs
        return torch.cat([x, torch.sin(xf).flatten(-2), torch.cos(xf).flatten(-2)], -1)

    def forward(self, x, d):
        h = self.sigma_net(self.encode(x))
        sigmas = F.softplus(h[..., 0])
        rgbs = self.rgb_net(torch.cat([h[..., 1:], d], -1))
        return sigmas, rgbs


def render(model, rays_o, rays_d):
    t = torch.linspace(NEAR, FAR, N_SAMPLES)
    pts = rays_o[:, None, :] + rays_d[:, None, :] * t[None, :, None]
    dirs = F.normalize(rays_d, dim=-1)[:, None, :].expand_as(pts)
    sigmas, rgbs = model(pts, dirs)
    deltas = torch.full_like(sigmas, (FAR - NEAR) / N_SAMPLES)
    alphas = 1 - torch.exp(-sigmas * deltas)
    trans = torch.cumprod(torch.cat([torch.ones_like(alphas[:, :1]), 1 - alphas[:, :-1] + 1e-10], -1), -1)
    weights = alphas * trans
    return {"rgb": (weights[..., None] * rgbs).sum(1), "opacity": weights.sum(1)}


class NeRFSystem(nn.Module):
    def __init__(self, model, train_dataset):
        super().__init__()
        self.model = model
        self.train_dataset = train_dataset
        self.optimize_ext = True

    def forward(self, batch, split):
        if split == "train":
            poses = self.poses[batch["img_idxs"]]
            directions = self.directions[batch["pix_idxs"]]
        else:
            poses = batch["pose"]
            directions = self.directions

        if self.optimize_ext:
            dR = axisangle_to_R(self.dR[batch["img_idxs"]])
            poses[..., :3] = dR @ poses[..., :3]
            poses[..., 3] += self.dT[batch["img_idxs"]]

        rays_o, rays_d = get_rays(directions, poses)
        return render(self.model, rays_o, rays_d)

    def configure_optimizers(self):
        self.register_buffer("directions", self.train_dataset.directions)
        self.register_buffer("poses", self.train_dataset.poses)
        if self.optimize_ext:
            n = len(self.train_dataset.poses)
            self.register_parameter("dR", nn.Parameter(torch.zeros(n, 3)))
            self.register_parameter("dT", nn.Parameter(torch.zeros(n, 3)))

        net_params = [p for n, p in self.named_parameters() if n not in ["dR", "dT"]]
        net_opt = torch.optim.Adam(net_params, lr=1e-2, eps=1e-15)
        opts = [net_opt]
        if self.optimize_ext:
            opts += [torch.optim.Adam([self.dR, self.dT], 1e-6)]  # learning rate is hard-coded
        return opts

    def training_step(self, batch):
        with torch.autocast("cpu", dtype=torch.bfloat16):  # Trainer(precision=16)
            results = self(batch, split="train")
        return F.mse_loss(results["rgb"].float(), batch["rgb"])


def main():
    train_dataset = SyntheticScene()
    ngp = NGP()
    system = NeRFSystem(ngp, train_dataset)
    net_opt, ext_opt = system.configure_optimizers()
    train_loader = DataLoader(train_dataset, batch_size=None, shuffle=False, num_workers=0)

    for step, batch in enumerate(train_loader):
        loss = system.training_step(batch)
        net_opt.zero_grad()
        ext_opt.zero_grad()
        loss.backward()
        net_opt.step()
        ext_opt.step()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
        if step == 30:
            break


if __name__ == "__main__":
    main()
