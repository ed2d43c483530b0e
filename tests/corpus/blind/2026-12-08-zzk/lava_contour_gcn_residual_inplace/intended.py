"""Lava-flow segmentation from thermal-infrared frames with contour-point GCN refinement of the flow margin.

Source: https://github.com/hehao13/EBLNet/issues/9
("i have a problem with pytorch version").

The author was training EBLNet (edge-aware segmentation of glass-like objects: a
segmentation trunk, a boundary branch, and a ``ContourPointGCN`` that picks the most
uncertain boundary points, reasons over them with a GloRe-style GCN and scatters the
refined features back) on PyTorch 1.10 and ``main_loss.backward()`` failed with "one of
the variables needed for gradient computation has been modified by an inplace operation:
[torch.cuda.FloatTensor [4, 96, 256]], which is output 0 of ReluBackward0, is at version
1; expected version 0 instead".  The author later found the cause in the GCN: after
``z = self.relu(z)`` the Laplacian-smoothing residual is added in place, ``z += x``, which
overwrites the ReLU output that ReLU's backward needs.  The fix is the out-of-place
residual, ``z = z + x``.

Reduction: the same trunk / boundary branch / contour-point GCN layout, sized down and
set on lava flows: a small conv trunk over single-band thermal frames, a boundary head
supervised on the flow margin, the GCN over the top-k uncertain margin points with the
in-place residual after its ReLU, and a head segmenting active lava vs cooled ground.
Synthetic frames (hot lobes over a cooler, noisy background) stand in for drone imagery;
trained with SGD on a segmentation loss plus a boundary loss.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "image": 32,
    "width": 16,
    "num_points": 24,
    "edge_threshold": 0.5,
    "n_frames": 32,
    "batch_size": 8,
    "epochs": 2,
    "lr": 0.01,
    "edge_weight": 0.5,
}


def get_uncertain_point_coords_on_grid(uncertainty_map, num_points):
    R, _, H, W = uncertainty_map.shape
    num_points = min(H * W, num_points)
    point_indices = torch.topk(uncertainty_map.view(R, H * W), k=num_points, dim=1)[1]
    return point_indices


def point_sample(inp, point_indices):
    N, C, H, W = inp.shape
    point_indices = point_indices.unsqueeze(1).expand(-1, C, -1)
    return inp.flatten(start_dim=2).gather(dim=2, index=point_indices)      # (n, c, p)


class GCN(nn.Module):
    """GloRe-style graph convolution over the sampled margin points."""

    def __init__(self, node_num, node_fea):
        super().__init__()
        self.conv_adj = nn.Conv1d(node_num, node_num, kernel_size=1, bias=False)
        self.bn_adj = nn.BatchNorm1d(node_num)
        self.conv_wg = nn.Conv1d(node_fea, node_fea, kernel_size=1, bias=False)
        self.bn_wg = nn.BatchNorm1d(node_fea)
        self.relu = nn.ReLU()

    def forward(self, x):                       # x: (b, n, d)
        z = self.conv_adj(x)
        z = self.bn_adj(z)
        z = self.relu(z)
        # Laplacian smoothing
        z = z + x
        z = z.transpose(1, 2).contiguous()      # (b, d, n)
        z = self.conv_wg(z)
        z = self.bn_wg(z)
        z = self.relu(z)
        return z.transpose(1, 2).contiguous()   # (b, n, d)


class ContourPointGCN(nn.Module):
    def __init__(self, channels, num_points, thresholds=0.8):
        super().__init__()
        self.num_points = num_points
        self.thresholds = thresholds
        self.gcn = GCN(num_points, channels)

    def forward(self, x, edge):
        B, C, H, W = x.size()
        edge[edge < self.thresholds] = 0
        edge_index = get_uncertain_point_coords_on_grid(edge, self.num_points)
        feats = point_sample(x, edge_index).permute(0, 2, 1)        # (b, n, c)
        reasoned = self.gcn(feats).permute(0, 2, 1)                   # (b, c, n)
        edge_index = edge_index.unsqueeze(1).expand(-1, C, -1)
        return x.reshape(B, C, H * W).scatter(2, edge_index, reasoned).view(B, C, H, W)


class LavaMarginNet(nn.Module):
    def __init__(self, hp):
        super().__init__()
        w = hp["width"]
        self.trunk = nn.Sequential(
            nn.Conv2d(1, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
            nn.Conv2d(w, w, 3, stride=2, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
            nn.Conv2d(w, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
        )
        self.edge_head = nn.Sequential(nn.Conv2d(w, w, 3, padding=1), nn.ReLU(), nn.Conv2d(w, 1, 1))
        self.refine = ContourPointGCN(w, hp["num_points"], thresholds=hp["edge_threshold"])
        self.seg_head = nn.Conv2d(w, 2, 1)

    def forward(self, frames):
        body = self.trunk(frames)
        edge_logits = self.edge_head(body)
        refined = self.refine(body, torch.sigmoid(edge_logits.detach()))
        seg = self.seg_head(refined + body)
        size = frames.shape[-2:]
        return (F.interpolate(seg, size=size, mode="bilinear", align_corners=False),
                F.interpolate(edge_logits, size=size, mode="bilinear", align_corners=False))


def make_frames(hp):
    n, s = hp["n_frames"], hp["image"]
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, s), torch.linspace(-1, 1, s), indexing="ij")
    cy, cx = torch.rand(n, 2).mul(1.0).sub(0.5).unbind(1)
    ry, rx = (0.3 + 0.4 * torch.rand(n, 2)).unbind(1)
    lobe = ((yy - cy[:, None, None]) / ry[:, None, None]) ** 2 + ((xx - cx[:, None, None]) / rx[:, None, None]) ** 2
    mask = (lobe < 1).long()
    temp = 0.2 * torch.randn(n, s, s) + mask.float() * (1.0 + 0.3 * torch.rand(n, 1, 1))
    m = mask.float().unsqueeze(1)
    margin = (F.max_pool2d(m, 3, 1, 1) - (-F.max_pool2d(-m, 3, 1, 1))).clamp(0, 1)
    return temp.unsqueeze(1), mask, margin


def train_epoch(model, optimizer, frames, masks, margins, hp):
    model.train()
    perm = torch.randperm(len(frames))
    total = 0.0
    for i in range(0, len(frames), hp["batch_size"]):
        idx = perm[i:i + hp["batch_size"]]
        seg, edge = model(frames[idx])
        main_loss = F.cross_entropy(seg, masks[idx]) + hp["edge_weight"] * F.binary_cross_entropy_with_logits(edge, margins[idx])
        optimizer.zero_grad()
        main_loss.backward()
        optimizer.step()
        total += main_loss.item()
    return total


def main():
    torch.manual_seed(11)
    hp = HPARAMS
    frames, masks, margins = make_frames(hp)
    model = LavaMarginNet(hp)
    optimizer = torch.optim.SGD(model.parameters(), lr=hp["lr"], momentum=0.9, weight_decay=1e-4)
    for epoch in range(hp["epochs"]):
        total = train_epoch(model, optimizer, frames, masks, margins, hp)
        print(f"epoch {epoch}: loss {total:.4f}")


if __name__ == "__main__":
    main()
