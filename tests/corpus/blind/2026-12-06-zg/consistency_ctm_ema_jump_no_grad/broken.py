"""Consistency trajectory model (CTM) for short 2-D action chunks, trained against an EMA target.

Report: https://github.com/Aaditya-Prasad/consistency-policy/issues/4
("CTM Loss Not Actually Used in the Student Training?"). In consistency-policy's CTM student,
the student's jump t -> s (``pred``) and the EMA target's jump u -> s are both carried on to the
minimum time by the EMA network inside ``torch.no_grad()``, so the CTM loss has no grad_fn: the
student is never trained by it. The author of the report noticed it when the CTM term was the
only loss. Here the training setting is the writer's (a toy action-chunk data set, an MLP jump
network with EDM-style skip scaling, one Adam optimizer); the mechanism is the report's: the
student's prediction is re-mapped by the EMA network under ``no_grad``, and ``loss.backward()``
raises because nothing in the loss requires grad.
"""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

CHUNK, DIM = 8, 2
SIGMA_MIN, SIGMA_MAX, SIGMA_DATA = 0.002, 80.0, 0.5
N_LEVELS = 18


def karras_sigmas(n, rho=7.0):
    ramp = torch.linspace(0, 1, n)
    lo, hi = SIGMA_MIN ** (1 / rho), SIGMA_MAX ** (1 / rho)
    return (hi + ramp * (lo - hi)) ** rho  # decreasing


def make_chunks(n):
    # smooth 2-D reaching motions: a start, a goal and a cosine ease between them
    start = torch.randn(n, 1, DIM) * 0.3
    goal = torch.randn(n, 1, DIM) * 0.6
    phase = (1 - torch.cos(torch.linspace(0, math.pi, CHUNK))) / 2
    return start + (goal - start) * phase.view(1, CHUNK, 1)


class TimeEmbed(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.register_buffer("freqs", torch.exp(torch.linspace(0, math.log(100.0), dim // 4)))
        self.proj = nn.Linear(dim, dim)

    def forward(self, t, s):
        ang_t = torch.log(t).unsqueeze(-1) * self.freqs
        ang_s = torch.log(s).unsqueeze(-1) * self.freqs
        emb = torch.cat([ang_t.sin(), ang_t.cos(), ang_s.sin(), ang_s.cos()], dim=-1)
        return F.silu(self.proj(emb))


class JumpNet(nn.Module):
    """G(x_t, t, s): jumps an action chunk from noise level t to level s."""

    def __init__(self, hidden=128):
        super().__init__()
        self.embed = TimeEmbed(32)
        self.body = nn.Sequential(
            nn.Linear(CHUNK * DIM + 32, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, CHUNK * DIM),
        )

    def forward(self, x, t, s):
        b = x.shape[0]
        c_in = 1.0 / torch.sqrt(t ** 2 + SIGMA_DATA ** 2)
        h = torch.cat([(x * c_in.view(b, 1, 1)).flatten(1), self.embed(t, s)], dim=-1)
        denoised_guess = self.body(h).view(b, CHUNK, DIM)
        c_skip = SIGMA_DATA ** 2 / ((t - SIGMA_MIN) ** 2 + SIGMA_DATA ** 2)
        c_out = (t - SIGMA_MIN) * SIGMA_DATA / torch.sqrt(t ** 2 + SIGMA_DATA ** 2)
        x0 = c_skip.view(b, 1, 1) * x + c_out.view(b, 1, 1) * denoised_guess
        ratio = (s / t).view(b, 1, 1)
        return ratio * x + (1 - ratio) * x0  # DDIM-like jump t -> s


def huber(a, b, delta=1e-3):
    d2 = (a - b).pow(2).flatten(1).sum(-1)
    return (torch.sqrt(d2 + delta ** 2) - delta).mean()


model = JumpNet()
ema_model = copy.deepcopy(model)
for p in ema_model.parameters():
    p.requires_grad_(False)
optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
sigmas = karras_sigmas(N_LEVELS)
data = make_chunks(256)
EMA_DECAY = 0.95


@torch.no_grad()
def update_ema():
    for pe, pm in zip(ema_model.parameters(), model.parameters()):
        pe.mul_(EMA_DECAY).add_(pm, alpha=1 - EMA_DECAY)


for step in range(40):
    idx = torch.randint(0, data.shape[0], (32,))
    x0 = data[idx]
    b = x0.shape[0]
    n = torch.randint(0, N_LEVELS - 2, (b,))
    t, u = sigmas[n], sigmas[n + 1]  # adjacent noise levels, u < t
    s = SIGMA_MIN * 1.01 + (u - SIGMA_MIN * 1.01) * torch.rand(b)  # a stop level below u
    z = torch.randn_like(x0)
    x_t = x0 + t.view(b, 1, 1) * z
    x_u = x0 + u.view(b, 1, 1) * z

    # t -> s with the student
    pred = model(x_t, t, s)
    # u -> s with the EMA target
    with torch.no_grad():
        target = ema_model(x_u, u, s)

    # carry both on to the minimum time with the EMA network (CTM's feature space)
    with torch.no_grad():
        start = torch.full_like(s, SIGMA_MIN)
        pred = ema_model(pred, s, start)
        target = ema_model(target, s, start)

    loss = huber(pred, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    update_ema()
    if step % 10 == 0:
        print(f"step {step:3d} ctm {loss.item():.4f}")
