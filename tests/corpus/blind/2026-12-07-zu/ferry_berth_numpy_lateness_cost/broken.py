"""Ferry terminal scheduling: predicting berth occupancy time with a tariff-weighted cost.

Source: https://github.com/pytorch/pytorch/issues/37000 . `a.numpy()` on a tensor that
requires grad raised "Can't call numpy() on Variable that requires grad" even inside
`torch.no_grad()`; the maintainers allowed the conversion in no_grad mode, since "the fact
that we run in no_grad mode means that the user expects no gradients to flow".

Reduction: the writer's setting is a ferry and ro-ro terminal that plans berth slots. A model
predicts how long each arriving vessel will occupy its berth from its manifest and the
weather. The planners' cost is asymmetric (an overrun blocks the next sailing and is charged
at the berth's tariff, an early release only wastes part of a slot); the cost helper is
written with numpy over the berth tariff table, inside no_grad so that .numpy() is allowed,
and the result is turned back into a tensor that training calls backward on.
"""

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(5)

BERTH_TARIFF = np.array([1.0, 1.4, 2.2, 3.0], dtype=np.float32)
EARLY_WEIGHT = 0.3
FEATURES = 9
VESSELS = 256
BATCH = 32
STEPS = 12


class BerthTimeModel(nn.Module):
    def __init__(self, features, berths, hidden=32):
        super().__init__()
        self.berth_embed = nn.Embedding(berths, 4)
        self.body = nn.Sequential(nn.Linear(features + 4, hidden), nn.ReLU(),
                                  nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, manifest, berth):
        z = torch.cat([manifest, self.berth_embed(berth)], dim=1)
        return nn.functional.softplus(self.body(z)).squeeze(-1)


def simulate_arrivals(n):
    manifest = torch.randn(n, FEATURES)
    berth = torch.randint(0, len(BERTH_TARIFF), (n,))
    hours = 1.5 + 0.6 * manifest[:, 0].abs() + 0.3 * manifest[:, 1] ** 2 + 0.2 * berth.float()
    hours = hours + 0.1 * torch.randn(n)
    return manifest, berth, hours.clamp(min=0.3)


def lateness_cost(predicted, actual, berth):
    with torch.no_grad():
        pred = predicted.numpy()
        act = actual.numpy()
        tariff = BERTH_TARIFF[berth.numpy()]
        overrun = np.maximum(act - pred, 0.0) * tariff
        early = np.maximum(pred - act, 0.0) * EARLY_WEIGHT
        cost = np.mean(overrun ** 2 + early ** 2)
    return torch.tensor(cost, dtype=torch.float32)


class Planner:
    def __init__(self, model, lr=3e-3):
        self.model = model
        self.optimizer = torch.optim.RMSprop(model.parameters(), lr=lr)

    def fit_batch(self, manifest, berth, hours):
        predicted = self.model(manifest, berth)
        cost = lateness_cost(predicted, hours, berth)
        self.optimizer.zero_grad()
        cost.backward()
        self.optimizer.step()
        return cost.item()


def main():
    manifest, berth, hours = simulate_arrivals(VESSELS)
    model = BerthTimeModel(FEATURES, len(BERTH_TARIFF))
    planner = Planner(model)
    for step in range(STEPS):
        idx = torch.randint(0, VESSELS, (BATCH,))
        value = planner.fit_batch(manifest[idx], berth[idx], hours[idx])
        if step % 4 == 0:
            print(f"step {step}: tariff-weighted cost {value:.3f}")


if __name__ == "__main__":
    main()
