"""Fourier neural operator (1-D) as a surrogate for the heat equation, trained with a masked relative L2 loss.

Report: https://github.com/facebookresearch/svoice/issues/53
In svoice's training loss (``cal_si_snr_with_pit``) the estimated sources were masked in place,
``estimate_source *= mask``, on a tensor that is one output of ``unbind``; from torch 1.9 on this
raises "Output 0 of UnbindBackward is a view and is being modified inplace. This view is the output
of a function that returns multiple views". The reporter's fix: ``estimate_source =
estimate_source.clone()`` before the in-place mask.
The training setting is the writer's: an FNO maps an initial temperature profile to the profile at
t = 0.1; the loss is a per-sample relative L2 error that ignores a sponge region at both ends,
computed by iterating over the batch (iterating a tensor unbinds it) and masking each prediction in place.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

GRID, MODES, WIDTH, BATCH = 64, 12, 24, 16


class SpectralConv1d(nn.Module):
    def __init__(self, in_ch, out_ch, modes):
        super().__init__()
        self.modes = modes
        scale = 1.0 / (in_ch * out_ch)
        self.weights = nn.Parameter(scale * torch.randn(in_ch, out_ch, modes, dtype=torch.cfloat))

    def forward(self, x):
        x_ft = torch.fft.rfft(x)
        out_ft = torch.zeros(x.shape[0], self.weights.shape[1], x.shape[-1] // 2 + 1, dtype=torch.cfloat)
        out_ft[:, :, :self.modes] = torch.einsum("bix,iox->box", x_ft[:, :, :self.modes], self.weights)
        return torch.fft.irfft(out_ft, n=x.shape[-1])


class FNO1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.lift = nn.Linear(2, WIDTH)
        self.spectral = nn.ModuleList(SpectralConv1d(WIDTH, WIDTH, MODES) for _ in range(3))
        self.pointwise = nn.ModuleList(nn.Conv1d(WIDTH, WIDTH, 1) for _ in range(3))
        self.project = nn.Sequential(nn.Linear(WIDTH, 64), nn.GELU(), nn.Linear(64, 1))

    def forward(self, u0):
        grid = torch.linspace(0, 1, u0.shape[-1]).expand(u0.shape[0], -1)
        h = self.lift(torch.stack([u0, grid], dim=-1)).permute(0, 2, 1)
        for k, (spec, pw) in enumerate(zip(self.spectral, self.pointwise)):
            h = spec(h) + pw(h)
            if k < len(self.spectral) - 1:
                h = F.gelu(h)
        return self.project(h.permute(0, 2, 1)).squeeze(-1)


def heat_dataset(n, t=0.1, nu=0.05):
    k = torch.arange(GRID // 2 + 1, dtype=torch.float32)
    coeffs = torch.randn(n, GRID // 2 + 1, dtype=torch.cfloat) / (1 + k) ** 2
    coeffs[:, 0] = 0
    u0 = torch.fft.irfft(coeffs, n=GRID) * GRID
    ut = torch.fft.irfft(coeffs * torch.exp(-nu * (2 * torch.pi * k) ** 2 * t), n=GRID) * GRID
    return u0, ut


def masked_rel_l2(pred, target, mask):
    total = 0.0
    for p, y in zip(pred, target):
        p = p.clone()
        p *= mask
        y = y * mask
        total = total + torch.linalg.norm(p - y) / torch.linalg.norm(y)
    return total / pred.shape[0]


u0_all, ut_all = heat_dataset(128)
mask = torch.ones(GRID)
mask[:4] = 0
mask[-4:] = 0

model = FNO1d()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)

for epoch in range(3):
    perm = torch.randperm(u0_all.shape[0])
    for i in range(0, perm.numel(), BATCH):
        idx = perm[i:i + BATCH]
        pred = model(u0_all[idx])
        loss = masked_rel_l2(pred, ut_all[idx], mask)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scheduler.step()
    print(f"epoch {epoch} rel-L2 {loss.item():.4f}")
