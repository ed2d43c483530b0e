"""Reduced from https://github.com/sniklaus/softmax-splatting/issues/50

The author trained a frame-interpolation network built around softmax splatting, a custom
torch.autograd.Function that forward-warps a feature map by an optical flow and keeps
`self.save_for_backward(tenIn, tenFlow)` for its hand-written backward. The layer after the
splatting modified the feature map it had been given in place, and loss.backward() failed with
"one of the variables needed for gradient computation has been modified by an inplace
operation"; the author fixed it by saving clones in save_for_backward.

Here: a tiny encoder produces features, a flow head produces a flow, a simplified
"splat" Function (bilinear-ish weighting by the flow) saves both inputs, and the refinement
branch then applies LeakyReLU(inplace=True) to the same feature tensor.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Splat(torch.autograd.Function):
    @staticmethod
    def forward(ctx, ten_in, ten_flow):
        ctx.save_for_backward(ten_in.clone(), ten_flow.clone())
        weight = torch.sigmoid(ten_flow.sum(1, keepdim=True))
        return ten_in * weight

    @staticmethod
    def backward(ctx, grad_out):
        ten_in, ten_flow = ctx.saved_tensors
        s = torch.sigmoid(ten_flow.sum(1, keepdim=True))
        grad_in = grad_out * s
        grad_w = (grad_out * ten_in).sum(1, keepdim=True) * s * (1 - s)
        grad_flow = grad_w.expand_as(ten_flow).contiguous()
        return grad_in, grad_flow


class Interp(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Conv2d(3, 8, 3, padding=1)
        self.flow_head = nn.Conv2d(6, 2, 3, padding=1)
        self.refine_act = nn.LeakyReLU(0.1, inplace=True)
        self.refine = nn.Conv2d(16, 3, 3, padding=1)

    def forward(self, frame0, frame1):
        feat = self.encoder(frame0)
        flow = self.flow_head(torch.cat([frame0, frame1], 1))
        warped = Splat.apply(feat, flow)
        feat = self.refine_act(feat)
        return self.refine(torch.cat([warped, feat], 1))


model = Interp()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

frames0 = torch.randn(16, 3, 12, 12)
frames1 = torch.randn(16, 3, 12, 12)
targets = 0.5 * (frames0 + frames1)

for step in range(4):
    for i in range(0, 16, 4):
        out = model(frames0[i:i + 4], frames1[i:i + 4])
        loss = F.l1_loss(out, targets[i:i + 4])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(step, loss.item())
