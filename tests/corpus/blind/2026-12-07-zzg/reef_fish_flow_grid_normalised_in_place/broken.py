"""Reef-fish census from snorkel video: density maps carried between frames by a predicted flow.

Source: https://github.com/aimerykong/predictive-filter-flow/issues/5 (training the mgPFF demo
failed with "one of the variables needed for gradient computation has been modified by an inplace
operation"; the author of the issue traced it to the sampling-grid normalisation in losses.py,
``vgrid[:,0,:,:] = 2.0*vgrid[:,0,:,:]/max(W-1,1)-1.0`` and the same for the y row, and patched it
with clone(); the maintainer answered that it can be rewritten as a tensor operation, dividing
``2.0*vgrid`` by a tensor holding the denominators).

Reduction: a small flow network predicts the motion between two consecutive density maps of a
transect video; the previous map is warped to the next with grid_sample through a pixel-space
grid, which the loss also uses, before normalisation, to penalise flow that carries fish out of
the frame. The grid is then normalised to [-1, 1] row by row in place. The training setting is the
writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

PARAMS = {"seed": 3, "clips": 12, "size": 16, "fish": 6, "hidden": 16, "lr": 2e-3,
          "epochs": 5, "count_weight": 0.1, "exit_weight": 0.01}


class FlowNet(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.encode = nn.Sequential(
            nn.Conv2d(2, hidden, 3, padding=1), nn.LeakyReLU(0.1),
            nn.Conv2d(hidden, hidden, 3, padding=1), nn.LeakyReLU(0.1),
        )
        self.to_flow = nn.Conv2d(hidden, 2, 3, padding=1)

    def forward(self, prev, nxt):
        return 2.0 * torch.tanh(self.to_flow(self.encode(torch.cat([prev, nxt], dim=1))))


def pixel_grid(b, h, w):
    ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")
    return torch.stack([xs, ys], dim=0).unsqueeze(0).expand(b, 2, h, w)


def splat(centres, size):
    ys, xs = torch.meshgrid(torch.arange(size, dtype=torch.float32), torch.arange(size, dtype=torch.float32), indexing="ij")
    d2 = (xs[None, None] - centres[..., 0, None, None]) ** 2 + (ys[None, None] - centres[..., 1, None, None]) ** 2
    return torch.exp(-d2 / 2.0).sum(dim=1, keepdim=True)


def make_transects(cfg):
    start = 3.0 + (cfg["size"] - 6.0) * torch.rand(cfg["clips"], cfg["fish"], 2)
    drift = torch.randn(cfg["clips"], 1, 2)
    prev = splat(start, cfg["size"])
    nxt = splat(start + drift, cfg["size"])
    return prev, nxt


def warp(density, flow):
    b, _, h, w = flow.shape
    vgrid = pixel_grid(b, h, w) + flow
    exit_penalty = (vgrid[:, 0] - vgrid[:, 0].clamp(0, w - 1)).abs().mean() + \
        (vgrid[:, 1] - vgrid[:, 1].clamp(0, h - 1)).abs().mean()
    vgrid[:, 0, :, :] = 2.0 * vgrid[:, 0, :, :] / max(w - 1, 1) - 1.0
    vgrid[:, 1, :, :] = 2.0 * vgrid[:, 1, :, :] / max(h - 1, 1) - 1.0
    warped = F.grid_sample(density, vgrid.permute(0, 2, 3, 1), align_corners=True)
    return warped, exit_penalty


def census_step(flow_net, optimizer, prev, nxt, cfg):
    flow = flow_net(prev, nxt)
    warped, exit_penalty = warp(prev, flow)
    count_gap = (warped.sum(dim=(1, 2, 3)) - nxt.sum(dim=(1, 2, 3))).pow(2).mean() / cfg["fish"]
    census_loss = F.mse_loss(warped, nxt) + cfg["count_weight"] * count_gap + cfg["exit_weight"] * exit_penalty
    optimizer.zero_grad()
    census_loss.backward()
    optimizer.step()
    return census_loss.item()


def main():
    cfg = PARAMS
    torch.manual_seed(cfg["seed"])
    prev, nxt = make_transects(cfg)
    flow_net = FlowNet(cfg["hidden"])
    optimizer = torch.optim.Adam(flow_net.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        print(f"epoch {epoch} census loss {census_step(flow_net, optimizer, prev, nxt, cfg):.5f}")


if __name__ == "__main__":
    main()
