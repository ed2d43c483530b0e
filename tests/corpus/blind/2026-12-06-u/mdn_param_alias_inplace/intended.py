"""Handwriting generation (Graves-style LSTM + mixture density network over pen offsets).

Report: https://github.com/Jee-King/TSAN/issues/3
The reporter hit "one of the variables needed for gradient computation has been modified by an
inplace operation" and gave the fix: in the model's forward, ``out = x`` must be ``out = x.clone()``.
``out = x`` binds a second name to the same tensor, so the later in-place writes into ``out`` also
overwrite ``x``, which an earlier operation had saved for backward.

The report is an image super-resolution network; the training setting is the writer's: an LSTM over
pen strokes (dx, dy, pen-up) whose linear head is turned into mixture parameters by a helper that
"works on a copy" ``out = y`` of the raw output and writes the normalised log-weights, the standard
deviations, the correlations and the end-of-stroke probability into slices of it. The log-weights are
normalised with ``logsumexp``, which saves its input: the raw slice of ``y`` that the assignment then
overwrites.
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)

B, T, H, M = 8, 40, 64, 5


def synthetic_strokes(n, length):
    """Loops of varying radius, with a pen lift every 10 points."""
    t = torch.linspace(0, 4 * math.pi, length + 1)
    radius = 1 + torch.rand(n, 1)
    phase = torch.rand(n, 1) * 2 * math.pi
    xs, ys = radius * torch.cos(t + phase) + 0.1 * t, radius * torch.sin(t + phase)
    pts = torch.stack([xs, ys], -1)
    offsets = pts[:, 1:] - pts[:, :-1] + 0.02 * torch.randn(n, length, 2)
    pen = torch.zeros(n, length, 1)
    pen[:, 9::10] = 1.0
    return torch.cat([offsets, pen], -1)


class HandwritingMDN(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, H, num_layers=2, batch_first=True)
        self.head = nn.Linear(H, 6 * M + 1)

    def forward(self, strokes):
        h, _ = self.lstm(strokes)
        return self.head(h)


def mixture_params(y):
    out = y.clone()
    out[..., :M] = y[..., :M] - torch.logsumexp(y[..., :M], -1, keepdim=True)  # log pi
    out[..., M : 3 * M] = torch.exp(y[..., M : 3 * M])  # sigma_x, sigma_y
    out[..., 5 * M : 6 * M] = torch.tanh(y[..., 5 * M : 6 * M])  # rho
    out[..., -1] = torch.sigmoid(y[..., -1])  # end of stroke
    log_pi = out[..., :M]
    sx, sy = out[..., M : 2 * M], out[..., 2 * M : 3 * M]
    mx, my = out[..., 3 * M : 4 * M], out[..., 4 * M : 5 * M]
    rho = out[..., 5 * M : 6 * M]
    eos = out[..., -1]
    return log_pi, mx, my, sx, sy, rho, eos


def mdn_nll(params, target):
    log_pi, mx, my, sx, sy, rho, eos = params
    dx, dy, pen = target[..., 0:1], target[..., 1:2], target[..., 2]
    zx, zy = (dx - mx) / sx, (dy - my) / sy
    one_m_rho2 = (1 - rho.pow(2)).clamp(min=1e-5)
    z = zx.pow(2) + zy.pow(2) - 2 * rho * zx * zy
    log_n = -z / (2 * one_m_rho2) - torch.log(2 * math.pi * sx * sy * one_m_rho2.sqrt())
    log_mix = torch.logsumexp(log_pi + log_n, -1)
    log_eos = pen * torch.log(eos + 1e-6) + (1 - pen) * torch.log(1 - eos + 1e-6)
    return -(log_mix + log_eos).mean()


data = synthetic_strokes(32, T + 1)
model = HandwritingMDN()
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3, momentum=0.9)

for epoch in range(2):
    perm = torch.randperm(data.shape[0])
    for start in range(0, data.shape[0], B):
        batch = data[perm[start : start + B]]
        inputs, targets = batch[:, :-1], batch[:, 1:]
        params = mixture_params(model(inputs))
        loss = mdn_nll(params, targets)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
    print(f"epoch {epoch}: nll {loss.item():.3f}")
