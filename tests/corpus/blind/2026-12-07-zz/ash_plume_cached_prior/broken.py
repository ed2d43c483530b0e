"""Volcanic ash-plume dispersion: inverting the eruption source term with a smoothness prior.

Source: https://github.com/pytorch/pytorch/issues/13494 ("Throws error when backward through
sum() twice"). The thread is about a graph that is accidentally kept alive and backpropagated
again on a later iteration: a graph made only of ``sum()`` saves nothing, so the repeated
backward passes silently, while any op that saves tensors raises "Trying to backward through
the graph a second time". The maintainers' point was that such a stale graph "lying around" is a
user error: the term must be rebuilt from the current parameters each time.

Reduction: an inversion of the mass-eruption-rate profile of an ash plume. A learnable emission
profile (per hour) and a small dispersion network map emissions and winds to ash loads at
ground stations. The Tikhonov smoothness prior on the emission profile lives on the objective
object as a ``functools.cached_property``, so it is built once from the profile's first values
and the same graph is added to every step's loss.
"""
import functools

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

HOURS = 24
N_STATIONS = 12
SMOOTH_LAMBDA = 0.5
STEPS = 6


class EmissionProfile(nn.Module):
    """Log mass-eruption rate per hour."""

    def __init__(self, hours):
        super().__init__()
        self.log_rate = nn.Parameter(torch.zeros(hours))

    def forward(self):
        return F.softplus(self.log_rate)


class DispersionNet(nn.Module):
    """Emission history + wind field -> ash load at each station."""

    def __init__(self, hours, n_stations, hidden=64):
        super().__init__()
        self.mix = nn.Sequential(
            nn.Linear(hours * 2, hidden), nn.GELU(), nn.Linear(hidden, n_stations)
        )

    def forward(self, rate, wind):
        x = torch.cat([rate.expand(wind.shape[0], -1), wind], dim=1)
        return F.softplus(self.mix(x))


class InversionObjective:
    def __init__(self, profile, weight):
        self.profile = profile
        self.weight = weight

    @functools.cached_property
    def smooth_prior(self):
        rate = self.profile()
        return self.weight * (rate[1:] - rate[:-1]).pow(2).sum()

    def data_misfit(self, predicted, observed):
        return F.mse_loss(torch.log1p(predicted), torch.log1p(observed))


def synthetic_observations(n_days=8):
    true_rate = torch.exp(-0.5 * ((torch.arange(HOURS) - 9.0) / 3.0) ** 2) * 4.0
    wind = torch.randn(n_days, HOURS)
    kernel = torch.rand(HOURS * 2, N_STATIONS) * 0.1
    loads = F.softplus(torch.cat([true_rate.expand(n_days, -1), wind], 1) @ kernel)
    return wind, loads + 0.01 * torch.rand_like(loads)


def invert(profile, plume, objective, wind, observed):
    optimizer = torch.optim.Adam(
        [{"params": profile.parameters(), "lr": 5e-2}, {"params": plume.parameters(), "lr": 1e-3}]
    )
    for step in range(STEPS):
        predicted = plume(profile(), wind)
        misfit = objective.data_misfit(predicted, observed)
        total = misfit + objective.smooth_prior
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
        print(f"step {step}: misfit {misfit.item():.4f}")


if __name__ == "__main__":
    wind, observed = synthetic_observations()
    profile = EmissionProfile(HOURS)
    plume = DispersionNet(HOURS, N_STATIONS)
    objective = InversionObjective(profile, SMOOTH_LAMBDA)
    invert(profile, plume, objective, wind, observed)
