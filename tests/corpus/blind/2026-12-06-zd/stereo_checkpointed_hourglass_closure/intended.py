"""PSMNet-style stereo matching with gradient checkpointing around the 3-D hourglasses.

Report: https://github.com/zhanghang1989/PyTorch-Encoding/issues/76
"Code breaks with grad checkpointing": with parts of the network wrapped in
``torch.utils.checkpoint``, ``loss.backward(retain_graph=True)`` failed inside the
checkpoint's own backward (``torch.autograd.backward(outputs, args)`` in
``checkpoint.py``) with "Trying to backward through the graph a second time". The
report shows the traceback, not the model. The writer's reading of it: the
reentrant checkpoint recomputes its function during backward and runs an inner
backward over the recomputed graph without retaining it. A tensor the function
reads from the enclosing scope, instead of receiving it as an argument, is not
cut off by the checkpoint, so the inner backward of the later segment (which runs
first) goes on through that tensor's history into the layers before it and frees
it; the earlier segment, which reads the same tensor, then fails.
``retain_graph=True`` on the outer call does not reach the inner backward, which
is why it did not help.

The training setting is the writer's: a small PSMNet (shared feature extractor,
concatenation cost volume, stacked 3-D hourglasses with the aggregated base
volume added back after each one, soft argmin disparity, intermediate
supervision) on synthetic rectified stereo pairs. The hourglasses are
checkpointed to save memory, and each checkpointed stage adds the base volume
``cost0`` from the enclosing ``forward``.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)

H, W, MAXDISP, C = 16, 32, 8, 4
N_PAIRS, BATCH = 16, 4


def make_pair():
    """Left image with texture, piecewise-constant disparity, right image warped from the left."""
    left = F.avg_pool2d(torch.rand(1, 1, H + 2, W + 2), 3, 1)[0]
    disp = torch.full((H, W), float(torch.randint(1, 3, (1,))))
    x0 = int(torch.randint(8, W - 8, (1,)))
    disp[:, x0:] = float(torch.randint(3, MAXDISP - 1, (1,)))
    xs = torch.arange(W)[None, :].expand(H, W)
    src = (xs + disp.long()).clamp(max=W - 1)
    right = torch.gather(left[0], 1, src)[None]
    return left.repeat(3, 1, 1), right.repeat(3, 1, 1), disp


pairs = [make_pair() for _ in range(N_PAIRS)]
lefts = torch.stack([p[0] for p in pairs])
rights = torch.stack([p[1] for p in pairs])
disps = torch.stack([p[2] for p in pairs])


def conv3d_bn(cin, cout, stride=1):
    return nn.Sequential(nn.Conv3d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm3d(cout))


class FeatureNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 8, 3, 1, 1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, C, 3, 1, 1),
        )

    def forward(self, x):
        return self.net(x)


class Hourglass(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.down = nn.Sequential(conv3d_bn(ch, 2 * ch, 2), nn.ReLU())
        self.mid = nn.Sequential(conv3d_bn(2 * ch, 2 * ch), nn.ReLU())
        self.up = nn.Sequential(nn.ConvTranspose3d(2 * ch, ch, 3, 2, 1, output_padding=1, bias=False), nn.BatchNorm3d(ch))

    def forward(self, x):
        return self.up(self.mid(self.down(x)))


class StereoNet(nn.Module):
    def __init__(self, n_stages=2):
        super().__init__()
        self.feature = FeatureNet()
        self.dres0 = nn.Sequential(conv3d_bn(2 * C, 8), nn.ReLU(), conv3d_bn(8, 8), nn.ReLU())
        self.hourglasses = nn.ModuleList([Hourglass(8) for _ in range(n_stages)])
        self.heads = nn.ModuleList([nn.Conv3d(8, 1, 3, 1, 1) for _ in range(n_stages)])

    def cost_volume(self, fl, fr):
        d = MAXDISP // 2
        cost = fl.new_zeros(fl.shape[0], 2 * C, d, fl.shape[2], fl.shape[3])
        for i in range(d):
            if i > 0:
                cost[:, :C, i, :, i:] = fl[:, :, :, i:]
                cost[:, C:, i, :, i:] = fr[:, :, :, :-i]
            else:
                cost[:, :C, i] = fl
                cost[:, C:, i] = fr
        return cost

    def regress(self, cost):
        cost = F.interpolate(cost, size=(MAXDISP, H, W), mode="trilinear", align_corners=False).squeeze(1)
        prob = F.softmax(-cost, 1)
        candidates = torch.arange(MAXDISP, dtype=prob.dtype).view(1, -1, 1, 1)
        return (prob * candidates).sum(1)

    def forward(self, left, right):
        cost0 = self.dres0(self.cost_volume(self.feature(left), self.feature(right)))
        out, disparities = cost0, []
        for hourglass, head in zip(self.hourglasses, self.heads):

            def stage(x, base, hourglass=hourglass):
                return F.relu(hourglass(x) + base)

            out = checkpoint(stage, out, cost0, use_reentrant=True)
            disparities.append(self.regress(head(out)))
        return disparities


model = StereoNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999))
stage_weights = [0.7, 1.0]

for epoch in range(3):
    order = torch.randperm(N_PAIRS)
    for i in range(0, N_PAIRS, BATCH):
        idx = order[i : i + BATCH]
        left, right, gt = lefts[idx], rights[idx], disps[idx]
        valid = gt < MAXDISP
        preds = model(left, right)
        loss = sum(w * F.smooth_l1_loss(p[valid], gt[valid]) for w, p in zip(stage_weights, preds))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        epe = (preds[-1] - gt).abs()[valid].mean()
    print(f"epoch {epoch}: loss {loss.item():.3f}  EPE {epe.item():.3f}")
