"""Hotel revenue management: room-night demand per booking segment and price point.

Source: https://github.com/nerfstudio-project/gsplat/issues/710 ("Training Error: Trying to
backward through the graph a second time"). The author keeps all training state on a
``GsplatScene`` dataclass that ``init_3dgs`` builds once (the Gaussians as parameters, their
optimizers, the strategy state, and the camera tensors ``w2c`` / ``intrinsics`` made from the
inputs it was given); ``run_3dgs_optim`` then renders from ``scene.*`` every iteration and the
second ``loss.backward()`` fails. The thread does not say which field carries the old graph; the
reduction takes the reading that one tensor stored on the state object was computed, with grad,
from trained values when the object was built.

Reduction: a ``MarketState`` dataclass built once by ``init_market``; it holds the segment profiles
that a trained segment encoder computed from the segment attributes, and the demand model reads
``state.segment_profiles`` at every step. The training setting is the writer's.
"""

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

SEGMENTS = ["transient", "corporate", "group", "ota", "package", "crew"]
N_ATTR = 5          # lead time, length of stay, cancellation rate, weekday share, ADR index
N_CTX = 7           # day-of-week one-hot
PRICE_POINTS = 8
LR = 3e-3
STEPS = 4
BATCH = 24


@dataclass
class MarketState:
    segment_attrs: torch.Tensor
    segment_profiles: torch.Tensor
    price_grid: torch.Tensor
    optimizer: torch.optim.Optimizer
    step: int = 0


class SegmentEncoder(nn.Module):
    def __init__(self, n_attr, dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_attr, 16), nn.Tanh(), nn.Linear(16, dim))

    def forward(self, attrs):
        return self.net(attrs)


class DemandModel(nn.Module):
    def __init__(self, dim, n_ctx, n_prices):
        super().__init__()
        self.ctx = nn.Linear(n_ctx, dim)
        self.base = nn.Linear(dim, 1)
        self.elasticity = nn.Linear(dim, 1)
        self.n_prices = n_prices

    def forward(self, profiles, ctx, price_grid):
        h = torch.tanh(profiles[None, :, :] + self.ctx(ctx)[:, None, :])          # B x S x D
        base = F.softplus(self.base(h))                                         # B x S x 1
        slope = F.softplus(self.elasticity(h))                                  # B x S x 1
        return base * torch.exp(-slope * price_grid[None, None, :])             # B x S x P


def init_market(encoder, demand, attrs, lr):
    profiles = encoder(attrs)
    price_grid = torch.linspace(0.6, 1.6, PRICE_POINTS)
    params = list(encoder.parameters()) + list(demand.parameters())
    optimizer = torch.optim.Adam(params, lr=lr)
    return MarketState(attrs, profiles, price_grid, optimizer)


def synth_bookings(gen, n):
    ctx = F.one_hot(torch.randint(0, N_CTX, (n,), generator=gen), N_CTX).float()
    seg_scale = torch.linspace(2.0, 0.5, len(SEGMENTS))
    grid = torch.linspace(0.6, 1.6, PRICE_POINTS)
    lam = seg_scale[None, :, None] * torch.exp(-1.3 * grid)[None, None, :] * (1 + 0.3 * ctx[:, :1, None])
    nights = torch.poisson(lam.expand(n, -1, -1).contiguous(), generator=gen)
    return ctx, nights


def run_optim(state, encoder, demand, ctx, nights, steps):
    history = []
    for it in range(steps):
        idx = torch.arange(it * BATCH, (it + 1) * BATCH) % len(ctx)
        rate = demand(state.segment_profiles, ctx[idx], state.price_grid)
        booking_loss = F.poisson_nll_loss(rate, nights[idx], log_input=False)
        booking_loss = booking_loss + 1e-3 * state.segment_profiles.pow(2).mean()
        state.optimizer.zero_grad()
        booking_loss.backward()
        state.optimizer.step()
        state.step += 1
        history.append(booking_loss.item())
    return history


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(3)
    attrs = torch.randn(len(SEGMENTS), N_ATTR, generator=gen)
    ctx, nights = synth_bookings(gen, 96)
    encoder = SegmentEncoder(N_ATTR, 12)
    demand = DemandModel(12, N_CTX, PRICE_POINTS)
    state = init_market(encoder, demand, attrs, LR)
    losses = run_optim(state, encoder, demand, ctx, nights, STEPS)
    print("booking loss:", [round(v, 4) for v in losses])


if __name__ == "__main__":
    main()
