"""Latent SDE fitted to noisy trajectories: a GRU encoder gives q(z0), an Euler-Maruyama solver
integrates the posterior SDE, and the ELBO charges the KL between the posterior and prior drifts
along the path. Both drift networks are spectrally normalised with
torch.nn.utils.parametrizations.spectral_norm to keep the SDE well posed.

Reduces https://github.com/pytorch/pytorch/issues/71062. The reporter trained a network whose
convolutions had registered parametrizations (weight standardisation) and enabled
``torch.nn.utils.parametrize.cached()`` so that the parametrized weights, used many times by an
iterative solver, were computed once; training then failed with "Trying to backward through the
graph a second time". albanD: "the cached result is computed in a differentiable way. So if you
do multiple backwards within the cached context, you are trying to backward multiple times"; the
reporter then traced it to what their cached context enclosed. The cache belongs around one
forward, not around several backward passes. The training setting (a latent SDE whose drifts
are called at every Euler step) is the writer's.
"""
import math

import torch
import torch.nn as nn
import torch.nn.utils.parametrize as P
from torch.nn.utils.parametrizations import spectral_norm

torch.manual_seed(0)
N_SERIES, T_OBS, DT = 48, 24, 0.05
LATENT, CTX, HIDDEN = 4, 8, 32


def make_data():
    """Noisy double-well trajectories, observed at every step."""
    x = torch.randn(N_SERIES, 1) * 0.5
    xs = []
    for _ in range(T_OBS):
        xs.append(x)
        x = x + (x - x ** 3) * DT + 0.4 * math.sqrt(DT) * torch.randn_like(x)
    clean = torch.stack(xs, dim=1)  # (N, T, 1)
    return clean + 0.05 * torch.randn_like(clean)


def drift_net(in_dim):
    return nn.Sequential(
        spectral_norm(nn.Linear(in_dim, HIDDEN)), nn.Tanh(),
        spectral_norm(nn.Linear(HIDDEN, HIDDEN)), nn.Tanh(),
        nn.Linear(HIDDEN, LATENT),
    )


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(1, CTX, batch_first=True)
        self.to_q = nn.Linear(CTX, 2 * LATENT)

    def forward(self, obs):
        out, _ = self.gru(obs.flip(1))  # read the series backwards, so out[:, -1] has seen it all
        ctx = out.flip(1)
        mean, logstd = self.to_q(ctx[:, 0]).chunk(2, dim=-1)
        return mean, logstd, ctx


class LatentSDE(nn.Module):
    def __init__(self):
        super().__init__()
        self.post_drift = drift_net(LATENT + CTX + 1)
        self.prior_drift = drift_net(LATENT + 1)
        self.log_diff = nn.Parameter(torch.full((LATENT,), -1.0))
        self.decoder = nn.Linear(LATENT, 1)

    def forward(self, z0, ctx):
        g = nn.functional.softplus(self.log_diff)
        z, zs, kl_path = z0, [z0], 0.0
        for i in range(T_OBS - 1):
            t = torch.full_like(z[:, :1], i * DT)
            f = self.post_drift(torch.cat([z, ctx[:, i], t], dim=-1))
            h = self.prior_drift(torch.cat([z, t], dim=-1))
            kl_path = kl_path + 0.5 * (((f - h) / g) ** 2).sum(-1) * DT
            z = z + f * DT + g * math.sqrt(DT) * torch.randn_like(z)
            zs.append(z)
        return self.decoder(torch.stack(zs, dim=1)), kl_path


def elbo_terms(obs):
    mean, logstd, ctx = encoder(obs)
    z0 = mean + logstd.exp() * torch.randn_like(mean)
    recon, kl_path = sde(z0, ctx)
    nll = 0.5 * ((recon - obs) / 0.05) ** 2
    kl_z0 = 0.5 * (mean ** 2 + (2 * logstd).exp() - 1) - logstd
    return nll.sum((1, 2)).mean(), kl_z0.sum(-1).mean() + kl_path.mean()


data = make_data()
encoder = Encoder()
sde = LatentSDE()
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(sde.parameters()), lr=3e-3)

# the drifts are evaluated at every Euler step: compute their normalised weights once
with P.cached():
    for it in range(30):
        idx = torch.randperm(N_SERIES)[:16]
        nll, kl = elbo_terms(data[idx])
        loss = nll + kl
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(list(encoder.parameters()) + list(sde.parameters()), 10.0)
        optimizer.step()
        if it % 10 == 0:
            print(f"it {it}: nll {nll.item():.1f} kl {kl.item():.2f}")
