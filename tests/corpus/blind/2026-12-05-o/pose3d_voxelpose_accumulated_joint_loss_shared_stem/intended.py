"""Multi-view multi-person 3D pose (VoxelPose-style), trained from precomputed 2D heatmaps.

Reduced from https://github.com/microsoft/voxelpose-pytorch/issues/19 : the author trains
VoxelPose on the Campus setting, where the per-view 2D heatmaps are given as input (no 2D
backbone, so the 2D loss is zero). The heatmaps are projected into a coarse root volume
for the cuboid proposal net (root localisation loss `loss_cord`) and into a cuboid around
the proposed person for the pose regression net (`loss_3d`); both volumes go through the
same learned V2V stem. As in lib/core/function.py's train_3d, one Adam optimizer holds the
whole model, the proposal branch is updated every iteration and the 3D joint loss is
accumulated over `accumulation_steps` iterations before its update.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VIEWS, JOINTS, H, W, GRID = 3, 5, 16, 16, 4


class V2VStem(nn.Module):
    def __init__(self, in_dim, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())

    def forward(self, volume):
        return self.net(volume.flatten(1))


class VoxelPoseLite(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.v2v_stem = V2VStem(JOINTS * GRID * GRID, hidden)
        self.root_head = nn.Linear(hidden, 2)  # cuboid proposal net: root position in the image plane
        self.pose_head = nn.Linear(hidden, JOINTS * 3)  # pose regression net: joints relative to the root

    def project_root_volume(self, heatmaps):
        return F.adaptive_avg_pool2d(heatmaps.mean(1), GRID)

    def project_cuboid(self, heatmaps, centers):
        crops = []
        for b in range(heatmaps.shape[0]):
            cy, cx = (int(v) for v in centers[b])
            y0, x0 = max(0, min(H - 8, cy - 4)), max(0, min(W - 8, cx - 4))
            crops.append(heatmaps[b, :, :, y0 : y0 + 8, x0 : x0 + 8].mean(0))
        return F.adaptive_avg_pool2d(torch.stack(crops), GRID)

    def forward(self, meta, targets_3d, input_heatmaps):
        root_volume = self.project_root_volume(input_heatmaps)
        root_pred = self.root_head(self.v2v_stem(root_volume))
        loss_cord = F.l1_loss(root_pred, meta["root_2d"])

        grid_centers = root_pred.detach().clamp(0, H - 1).round()
        cuboid = self.project_cuboid(input_heatmaps, grid_centers)
        pred = self.pose_head(self.v2v_stem(cuboid)).view(-1, JOINTS, 3)
        loss_3d = F.l1_loss(pred, targets_3d)
        loss_2d = torch.zeros(1)
        return pred, grid_centers, loss_2d, loss_3d, loss_cord


def campus_loader(num_batches, batch_size=4):
    skeleton = torch.randn(JOINTS, 3)
    for _ in range(num_batches):
        root = torch.rand(batch_size, 2) * (H - 1)
        heat = 0.1 * torch.rand(batch_size, VIEWS, JOINTS, H, W)
        for b in range(batch_size):
            y, x = (int(v) for v in root[b].round())
            heat[b, :, :, y, x] += 1.0
        targets_3d = skeleton + 0.1 * torch.randn(batch_size, JOINTS, 3)
        yield {"root_2d": root}, targets_3d, heat


def train_3d(model, optimizer, loader, epoch):
    model.train()
    accumulation_steps = 2
    pending = []
    for i, (meta, targets_3d, input_heatmap) in enumerate(loader):
        pred, grid_centers, loss_2d, loss_3d, loss_cord = model(
            meta=meta, targets_3d=targets_3d, input_heatmaps=input_heatmap
        )
        loss_2d = loss_2d.mean()
        loss_3d = loss_3d.mean()
        loss_cord = loss_cord.mean()
        loss = loss_2d + loss_3d + loss_cord

        if loss_cord > 0:
            optimizer.zero_grad()
            (loss_2d + loss_cord).backward()
            optimizer.step()

        if pending and (i + 1) % accumulation_steps == 0:
            # the 3D loss of the accumulated batches, with the weights as they are now
            accu_loss_3d = 0.0
            for p_meta, p_targets_3d, p_heatmap in pending:
                accu_loss_3d += model(meta=p_meta, targets_3d=p_targets_3d, input_heatmaps=p_heatmap)[3] / accumulation_steps
            optimizer.zero_grad()
            accu_loss_3d.backward()
            optimizer.step()
            pending = []
        else:
            pending.append((meta, targets_3d, input_heatmap))
        print(f"epoch {epoch} iter {i}: loss {loss.item():.4f} loss_3d {loss_3d.item():.4f} loss_cord {loss_cord.item():.4f}")


model = VoxelPoseLite()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    train_3d(model, optimizer, campus_loader(6), epoch)
