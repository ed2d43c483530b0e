"""Solar irradiance nowcasting from sky-camera frames with a soft-argmax sun locator.

Report: https://github.com/xtcpete/rdd/issues/11 (RDD detector training fails after the
first evaluation with "Inference tensors cannot be saved for backward" at
``xy_residual = x_exp @ self.hw_grid``; fixed by commit 3347628 "fix:error when training
detector", which re-creates the SoftDetect module in ``train()`` when ``eval()`` replaced it).
The author trained a keypoint detector whose soft-argmax refinement keeps a local coordinate
grid on the module and moves it with ``self.hw_grid = self.hw_grid.to(patches)``. ``eval()``
builds a new detector for evaluation, ``extract()`` runs under ``torch.inference_mode()``, so the
moved grid is an inference tensor; ``train()`` only builds a detector when there is none, so
training resumes with the evaluation detector and its inference-mode grid. The training setting
(sun localisation on sky images feeding an irradiance regressor) is the writer's.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SunSoftDetect(nn.Module):
    """Top-k peaks of a sun heatmap refined to sub-pixel positions with a local soft-argmax."""

    def __init__(self, radius=2, top_k=1, temperature=0.1):
        super().__init__()
        self.radius, self.top_k, self.temperature = radius, top_k, temperature
        self.kernel = 2 * radius + 1
        self.unfold = nn.Unfold(kernel_size=self.kernel, padding=radius)
        r = np.linspace(-radius, radius, self.kernel)
        gx, gy = np.meshgrid(r, r)
        self.hw_grid = torch.from_numpy(np.stack([gx.ravel(), gy.ravel()], 1))  # float64, (k*k, 2)

    def forward(self, heat):
        b, _, h, w = heat.shape
        idx = torch.topk(heat.detach().view(b, -1), self.top_k).indices  # B x K, no grad
        patches = self.unfold(heat)  # B x k*k x H*W
        self.hw_grid = self.hw_grid.to(patches)  # move to the heatmap's dtype/device
        out = []
        for i in range(b):
            p = patches[i].t()[idx[i]]  # K x k*k
            x_exp = ((p - p.max(1, keepdim=True).values.detach()) / self.temperature).exp()
            residual = x_exp @ self.hw_grid / x_exp.sum(1, keepdim=True)  # soft-argmax, K x 2
            xy = torch.stack([idx[i] % w, idx[i] // w], 1).to(heat) + residual
            out.append(xy / heat.new_tensor([w - 1, h - 1]) * 2 - 1)
        return torch.stack(out)  # B x K x 2 in [-1, 1]


class SkyNowcaster(nn.Module):
    def __init__(self, frames=3):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(3 * frames, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.sun_head = nn.Conv2d(16, 1, 1)
        self.ghi_head = nn.Sequential(nn.Linear(16 + 16 + 2, 32), nn.ReLU(), nn.Linear(32, 1))
        self.detector = None

    def set_detector(self, top_k):
        self.detector = SunSoftDetect(radius=2, top_k=top_k)

    def train(self, mode=True):
        super().train(mode)
        if self.detector is None or self.detector.top_k != 1:  # rebuild after eval() replaced it
            self.set_detector(top_k=1)
        return self

    def eval(self):
        super().eval()
        self.set_detector(top_k=3)  # evaluation looks at a few candidate peaks
        return self

    def forward(self, frames):
        feat = self.encoder(frames)
        heat = self.sun_head(feat).sigmoid()
        sun_xy = self.detector(heat)  # B x K x 2
        at_sun = F.grid_sample(feat, sun_xy[:, :1, None, :], align_corners=True)[:, :, 0, 0]
        ghi = self.ghi_head(torch.cat([at_sun, feat.mean((2, 3)), sun_xy[:, 0]], 1)).squeeze(1)
        return ghi, sun_xy

    @torch.inference_mode()
    def predict(self, frames):
        return self.forward(frames)


def make_batch(n=4, size=24):
    frames = torch.rand(n, 9, size, size) * 0.3
    sun = torch.rand(n, 2) * 1.2 - 0.6  # true sun position in [-1, 1]
    cols = ((sun + 1) / 2 * (size - 1)).round().long()
    for i in range(n):
        frames[i, :, cols[i, 1], cols[i, 0]] += 1.0
    ghi = 800 * (1 - sun.norm(dim=1) / 2) / 1000 + 0.05 * torch.randn(n)
    return frames, sun, ghi


model = SkyNowcaster()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
train_batches = [make_batch() for _ in range(2)]
val_batch = make_batch()

for epoch in range(3):
    model.train()
    for frames, sun, ghi in train_batches:
        pred_ghi, sun_xy = model(frames)
        loss_ghi = F.mse_loss(pred_ghi, ghi)
        loss_sun = F.smooth_l1_loss(sun_xy[:, 0], sun)
        loss = loss_ghi + 0.5 * loss_sun
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    val_ghi, _ = model.predict(val_batch[0])
    print(f"epoch {epoch} train {loss.item():.4f} val mae {(val_ghi - val_batch[2]).abs().mean().item():.4f}")
