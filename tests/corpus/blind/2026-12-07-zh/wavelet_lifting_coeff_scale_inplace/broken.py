"""A learnable lifting-scheme wavelet (predict and update networks) for 1-D signals.

Source: https://github.com/vislearn/FrEIA/pull/164 -- with PyTorch 2.0, FrEIA's
AllInOneBlock coupling raised "one of the variables needed for gradient computation has been
modified by an inplace operation"; the PR replaced its in-place operations (the coupling
coefficients scaled down by ten with ``a *= 0.1``, and the like) by out-of-place ones. The
report is an invertible-network coupling block; the training setting is the writer's, and a
lifting step is a coupling step.

What the author was doing: each lifting level splits the signal into even and odd samples,
predicts the odd ones from the even ones (detail d = odd - P(even)) and updates the even ones
from the details (approximation s = even + U(d)). As in the coupling block, the predict and
update outputs are bounded with a tanh and then scaled down in place by 0.1 "for stability".
Two levels are trained so that the details are sparse and a reconstruction from
soft-thresholded details stays close to the signal. Tanh saved its output for the backward;
the in-place ``*= 0.1`` on that output breaks the backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

LENGTH = 64
BATCH = 8
LEVELS = 2
STEPS = 6


def synth_signals(n):
    t = torch.linspace(0, 1, LENGTH)
    freq = torch.randint(2, 6, (n, 1)).float()
    phase = torch.rand(n, 1) * 6.28
    smooth = torch.sin(6.28 * freq * t + phase)
    jumps = (t > torch.rand(n, 1)).float() * torch.randn(n, 1) * 0.5
    return (smooth + jumps + 0.05 * torch.randn(n, LENGTH)).unsqueeze(1)


class LiftingNet(nn.Module):
    """Predict or update operator: a small 1-D conv net, bounded by tanh."""

    def __init__(self, ch=8):
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(1, ch, 3, padding=1), nn.ReLU(),
                                  nn.Conv1d(ch, 1, 3, padding=1))

    def forward(self, x):
        return torch.tanh(self.body(x))


class LiftingLevel(nn.Module):
    def __init__(self):
        super().__init__()
        self.predict = LiftingNet()
        self.update = LiftingNet()

    def forward(self, x):
        even, odd = x[..., 0::2], x[..., 1::2]
        p = self.predict(even)
        p *= 0.1  # scale the coefficients down for stability
        d = odd - p
        u = self.update(d)
        u *= 0.1
        s = even + u
        return s, d

    def inverse(self, s, d):
        even = s - 0.1 * self.update(d)
        odd = d + 0.1 * self.predict(even)
        return torch.stack([even, odd], dim=-1).flatten(-2)


class LiftingWavelet(nn.Module):
    def __init__(self, levels):
        super().__init__()
        self.levels = nn.ModuleList([LiftingLevel() for _ in range(levels)])

    def forward(self, x):
        details = []
        s = x
        for level in self.levels:
            s, d = level(s)
            details.append(d)
        return s, details

    def inverse(self, s, details):
        for level, d in zip(reversed(self.levels), reversed(details)):
            s = level.inverse(s, d)
        return s


def soft_threshold(d, lam):
    return torch.sign(d) * F.relu(d.abs() - lam)


wavelet = LiftingWavelet(LEVELS)
optimizer = torch.optim.Adam(wavelet.parameters(), lr=2e-3)

for step in range(STEPS):
    x = synth_signals(BATCH)
    s, details = wavelet(x)
    sparsity = sum(d.abs().mean() for d in details)
    recon = wavelet.inverse(s, [soft_threshold(d, 0.05) for d in details])
    recon_loss = F.mse_loss(recon, x)
    loss = recon_loss + 0.1 * sparsity

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: recon {recon_loss.item():.4f} sparsity {sparsity.item():.4f}")
