"""Energy-based model of a 2-D ring-of-Gaussians density: an MLP energy whose
linear layers are spectrally normalised, negatives drawn by short-run Langevin
dynamics started from a persistent sample buffer, contrastive-divergence loss
with an energy-magnitude regulariser.

Reduced from https://github.com/pytorch/pytorch/pull/62293 ("Do not modify saved
variables in-place for spectral norm during power iteration"). The spectral-norm
parametrization ran its power iteration on the ``u``/``v`` buffers in place
(``F.normalize(..., out=u)``) and then cloned them, meaning to keep the saved
vectors safe; but ``sigma = u . W v`` saves those clones, and the *next* forward
normalises the same clones in place. A module called twice before one backward
(the PR names DataParallel and two forwards) then fails at backward with
"modified by an inplace operation". The writer's EBM layer copies that power
iteration, and the training step evaluates the energy of the data batch and of
the Langevin negatives with two calls before a single backward.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

BATCH, BUFFER_SIZE, LANGEVIN_STEPS = 128, 1000, 20
STEP_SIZE, NOISE, REINIT = 0.05, 0.01, 0.05
ALPHA, ITERS = 0.1, 30


class SNLinear(nn.Module):
    """Linear layer whose weight is divided by its largest singular value."""

    def __init__(self, fan_in, fan_out, eps=1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(fan_out, fan_in) / math.sqrt(fan_in))
        self.bias = nn.Parameter(torch.zeros(fan_out))
        self.eps = eps
        self.register_buffer("u", F.normalize(torch.randn(fan_out), dim=0))
        self.register_buffer("v", F.normalize(torch.randn(fan_in), dim=0))

    def _power_method(self, n_iters=1):
        with torch.no_grad():
            # clone BEFORE the in-place updates: the previous forward's sigma saved the old u, v
            self.u = self.u.clone(memory_format=torch.contiguous_format)
            self.v = self.v.clone(memory_format=torch.contiguous_format)
            for _ in range(n_iters):
                self.u = F.normalize(torch.mv(self.weight, self.v), dim=0, eps=self.eps, out=self.u)
                self.v = F.normalize(torch.mv(self.weight.t(), self.u), dim=0, eps=self.eps, out=self.v)

    def forward(self, x):
        if self.training:
            self._power_method()
        sigma = torch.dot(self.u, torch.mv(self.weight, self.v))
        return F.linear(x, self.weight / sigma, self.bias)


class EnergyNet(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.l1 = SNLinear(2, width)
        self.l2 = SNLinear(width, width)
        self.l3 = SNLinear(width, 1)

    def forward(self, x):
        h = F.silu(self.l1(x))
        h = F.silu(self.l2(h))
        return self.l3(h).squeeze(-1)


def sample_data(n):
    angles = torch.randint(0, 8, (n,)).float() * (2 * math.pi / 8)
    centers = torch.stack([torch.cos(angles), torch.sin(angles)], dim=-1) * 2.0
    return centers + 0.1 * torch.randn(n, 2)


class SampleBuffer:
    def __init__(self, size):
        self.samples = 4.0 * torch.rand(size, 2) - 2.0

    def draw(self, n):
        idx = torch.randint(0, self.samples.shape[0], (n,))
        x = self.samples[idx].clone()
        fresh = torch.rand(n) < REINIT
        x[fresh] = 4.0 * torch.rand(int(fresh.sum()), 2) - 2.0
        return x, idx

    def push(self, x, idx):
        self.samples[idx] = x.detach()


def langevin(energy, x):
    x = x.clone().requires_grad_(True)
    for _ in range(LANGEVIN_STEPS):
        grad_x, = torch.autograd.grad(energy(x).sum(), x)
        x = (x - STEP_SIZE * grad_x + NOISE * torch.randn_like(x)).detach().requires_grad_(True)
    return x.detach()


energy = EnergyNet()
optimizer = torch.optim.Adam(energy.parameters(), lr=1e-3, betas=(0.0, 0.999))
buffer = SampleBuffer(BUFFER_SIZE)

for it in range(ITERS):
    x_pos = sample_data(BATCH)
    x_init, idx = buffer.draw(BATCH)
    x_neg = langevin(energy, x_init)
    buffer.push(x_neg, idx)

    e_pos = energy(x_pos)
    e_neg = energy(x_neg)
    cd_loss = e_pos.mean() - e_neg.mean()
    reg_loss = ALPHA * (e_pos.pow(2).mean() + e_neg.pow(2).mean())
    loss = cd_loss + reg_loss

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if it % 10 == 0:
        print(f"iter {it:3d}  cd {cd_loss.item():+.4f}  E+ {e_pos.mean().item():+.3f}  E- {e_neg.mean().item():+.3f}")
