"""RAFT-style iterative flow refinement through a custom warping Function that saves its inputs.

Report: https://github.com/sniklaus/softmax-splatting/issues/50
The reporter trained a network around a custom ``torch.autograd.Function`` for flow-based warping
whose forward calls ``self.save_for_backward(tenIn, tenFlow)``; ``loss.backward()`` raised "one of
the variables needed for gradient computation has been modified by an inplace operation", and
saving clones instead (``self.save_for_backward(tenIn.clone(), tenFlow.clone())``) made it train.
The maintainer asked which layers came before and after the warp: the saved flow was modified in
place after the Function had saved it. Here (the training setting is the writer's) a small
RAFT-style estimator warps the second frame's features by the current flow with such a Function,
predicts a residual update from the warped features and refines the flow in place,
``flow += delta``, so every saved flow is at a newer version when the sequence loss backpropagates.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import vjp

torch.manual_seed(0)

H, W, FEAT, ITERS, GAMMA = 16, 16, 16, 3, 0.8


def backwarp(ten_in, ten_flow):
    b, _, h, w = ten_in.shape
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
    base = torch.stack([xs, ys], dim=-1).unsqueeze(0).expand(b, h, w, 2)
    scale = torch.tensor([2.0 / max(w - 1, 1), 2.0 / max(h - 1, 1)])
    grid = base + ten_flow.permute(0, 2, 3, 1) * scale
    return F.grid_sample(ten_in, grid, mode="bilinear", padding_mode="border", align_corners=True)


class BackWarp(torch.autograd.Function):
    """Warps ten_in by ten_flow; the backward recomputes the warp from the saved inputs."""

    @staticmethod
    def forward(ctx, ten_in, ten_flow):
        ctx.save_for_backward(ten_in.clone(), ten_flow.clone())
        return backwarp(ten_in, ten_flow)

    @staticmethod
    def backward(ctx, grad_out):
        ten_in, ten_flow = ctx.saved_tensors
        _, pullback = vjp(backwarp, ten_in, ten_flow)
        return pullback(grad_out)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, FEAT, 3, padding=1), nn.ReLU(), nn.Conv2d(FEAT, FEAT, 3, padding=1))

    def forward(self, x):
        return self.net(x)


class UpdateBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(2 * FEAT + 2, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 2, 3, padding=1))

    def forward(self, f1, warped, flow):
        return self.net(torch.cat([f1, warped, flow], dim=1))


class FlowNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.update = UpdateBlock()

    def forward(self, img1, img2, iters=ITERS):
        f1, f2 = self.encoder(img1), self.encoder(img2)
        flow = torch.zeros(img1.shape[0], 2, H, W)
        predictions = []
        for _ in range(iters):
            warped = BackWarp.apply(f2, flow)
            delta = self.update(f1, warped, flow)
            flow += delta
            predictions.append(flow * 1.0)
        return predictions


def sequence_loss(predictions, flow_gt):
    n = len(predictions)
    return sum(GAMMA ** (n - i - 1) * (pred - flow_gt).abs().mean() for i, pred in enumerate(predictions))


def make_pair(batch=2):
    img1 = torch.rand(batch, 3, H, W)
    shift = torch.randint(-2, 3, (2,))
    img2 = torch.roll(img1, shifts=(int(shift[1]), int(shift[0])), dims=(2, 3))
    flow_gt = torch.zeros(batch, 2, H, W)
    flow_gt[:, 0], flow_gt[:, 1] = -float(shift[0]), -float(shift[1])
    return img1, img2, flow_gt


def main():
    model = FlowNet()
    optimizer = torch.optim.AdamW(model.parameters(), lr=4e-4, weight_decay=1e-5)
    for step in range(6):
        img1, img2, flow_gt = make_pair()
        predictions = model(img1, img2)
        loss = sequence_loss(predictions, flow_gt)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 5 == 0:
            print(step, loss.item())


if __name__ == "__main__":
    main()
