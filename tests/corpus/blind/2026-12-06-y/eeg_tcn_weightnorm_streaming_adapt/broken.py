"""EEG motor-imagery decoding (EEGNet front end + weight-normalised TCN), adapted to a new subject online.

Reduced from https://github.com/facebookresearch/higher/issues/14 ("Inner loop incompatible with
weight_norm"). ``torch.nn.utils.weight_norm`` keeps ``weight_g`` and ``weight_v`` as parameters
and recomputes the plain tensor ``module.weight`` in a forward *pre-hook*, that is only when the
module is called. higher's patched modules call the class's ``forward`` directly (higher/patch.py),
so the pre-hook never runs and the layer keeps reading the ``weight`` tensor computed at the last
real call, whose graph the first backward frees: the next backward fails with "Trying to backward
through the graph a second time". A commenter pointed at weight_norm's ``weight`` attribute.

The training setting is the writer's: an EEG-TCNet-style decoder (temporal convolution,
depthwise spatial convolution and a depthwise-separable temporal convolution, then residual
blocks of dilated causal ``weight_norm`` convolutions, as in the usual TCN code) is pretrained on
source subjects with the ordinary forward, then adapted subject-wise to a new subject through the
streaming path it will run online: chunk by chunk, each causal convolution fed its cached left
context, which calls ``F.conv1d(..., conv.weight, ...)`` directly and so never runs the pre-hook.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import weight_norm

torch.manual_seed(0)

N_CH, T, N_CLASSES = 8, 64, 2
CHUNK = 16


def make_subject(n_trials, mixing):
    """Class-dependent 10 Hz / 20 Hz bursts on two sources, mixed into the electrodes by subject."""
    t = torch.arange(T).float() / 128.0
    labels = torch.randint(0, N_CLASSES, (n_trials,))
    sources = 0.5 * torch.randn(n_trials, N_CH, T)
    freq = torch.where(labels == 0, 10.0, 20.0)[:, None]
    sources[:, 0] += torch.sin(2 * torch.pi * freq * t)
    sources[:, 1] += torch.cos(2 * torch.pi * (30.0 - freq) * t)
    return torch.einsum("ij,njt->nit", mixing, sources), labels


class FrontEnd(nn.Module):
    """EEGNet block: temporal conv, depthwise spatial conv, depthwise-separable temporal conv."""

    def __init__(self, f1=8, d=2, f2=16):
        super().__init__()
        self.temporal = nn.Conv2d(1, f1, (1, 15), padding=(0, 7), bias=False)
        self.bn1 = nn.BatchNorm2d(f1)
        self.spatial = nn.Conv2d(f1, f1 * d, (N_CH, 1), groups=f1, bias=False)
        self.bn2 = nn.BatchNorm2d(f1 * d)
        self.sep_depth = nn.Conv2d(f1 * d, f1 * d, (1, 7), padding=(0, 3), groups=f1 * d, bias=False)
        self.sep_point = nn.Conv2d(f1 * d, f2, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(f2)

    def forward(self, x):
        x = self.bn1(self.temporal(x.unsqueeze(1)))
        x = F.avg_pool2d(F.elu(self.bn2(self.spatial(x))), (1, 2))
        x = F.elu(self.bn3(self.sep_point(self.sep_depth(x))))
        return x.squeeze(2)  # (batch, f2, time / 2)


class TemporalBlock(nn.Module):
    def __init__(self, ch, kernel, dilation):
        super().__init__()
        self.pad = (kernel - 1) * dilation
        self.dilation = dilation
        self.conv1 = weight_norm(nn.Conv1d(ch, ch, kernel, dilation=dilation))
        self.conv2 = weight_norm(nn.Conv1d(ch, ch, kernel, dilation=dilation))

    def forward(self, x):
        y = F.relu(self.conv1(F.pad(x, (self.pad, 0))))
        y = F.relu(self.conv2(F.pad(y, (self.pad, 0))))
        return F.relu(x + y)

    def forward_stream(self, x, cache):
        """One chunk; ``cache`` holds the last ``pad`` samples seen by each causal convolution."""
        inp = torch.cat([cache.get("c1", x.new_zeros(*x.shape[:2], self.pad)), x], -1)
        cache["c1"] = inp[..., -self.pad:]
        y = F.relu(F.conv1d(inp, self.conv1.weight, self.conv1.bias, dilation=self.dilation))
        inp = torch.cat([cache.get("c2", y.new_zeros(*y.shape[:2], self.pad)), y], -1)
        cache["c2"] = inp[..., -self.pad:]
        y = F.relu(F.conv1d(inp, self.conv2.weight, self.conv2.bias, dilation=self.dilation))
        return F.relu(x + y)


class EEGTCNet(nn.Module):
    def __init__(self, f2=16):
        super().__init__()
        self.frontend = FrontEnd(f2=f2)
        self.tcn = nn.ModuleList([TemporalBlock(f2, 3, 1), TemporalBlock(f2, 3, 2)])
        self.head = nn.Linear(f2, N_CLASSES)

    def forward(self, x):
        h = self.frontend(x)
        for block in self.tcn:
            h = block(h)
        return self.head(h[..., -1])

    def forward_stream(self, x):
        """Online decoding: the trial arrives in chunks; the decision is read after the last one."""
        caches = [dict() for _ in self.tcn]
        for start in range(0, x.shape[-1], CHUNK):
            h = self.frontend(x[..., start:start + CHUNK])
            for block, cache in zip(self.tcn, caches):
                h = block.forward_stream(h, cache)
        return self.head(h[..., -1])


source = [make_subject(24, torch.randn(N_CH, N_CH) / N_CH ** 0.5 + torch.eye(N_CH)) for _ in range(3)]
target_x, target_y = make_subject(16, torch.randn(N_CH, N_CH) / N_CH ** 0.5 + torch.eye(N_CH))
src_x = torch.cat([s[0] for s in source])
src_y = torch.cat([s[1] for s in source])

model = EEGTCNet()
criterion = nn.CrossEntropyLoss()

pre_opt = torch.optim.Adam(model.parameters(), lr=3e-3)
# subject-wise adaptation only updates the temporal part and the head
adapt_params = list(model.tcn.parameters()) + list(model.head.parameters())
adapt_opt = torch.optim.Adam(adapt_params, lr=1e-3)

# 1) cross-subject pretraining, whole trials through the ordinary forward
for step in range(4):
    idx = torch.randint(0, src_x.shape[0], (16,))
    pre_loss = criterion(model(src_x[idx]), src_y[idx])
    pre_opt.zero_grad()
    pre_loss.backward()
    pre_opt.step()
    print(f"pretrain {step}: {pre_loss.item():.4f}")

# 2) subject-wise adaptation on the new subject's calibration trials, through the online path
for step in range(4):
    idx = torch.randint(0, target_x.shape[0], (8,))
    adapt_loss = criterion(model.forward_stream(target_x[idx]), target_y[idx])
    adapt_opt.zero_grad()
    adapt_loss.backward()
    adapt_opt.step()
    print(f"adapt {step}: {adapt_loss.item():.4f}")
