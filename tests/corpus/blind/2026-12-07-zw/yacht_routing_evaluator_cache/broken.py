"""Yacht race routing: a helm policy and an ETA critic read one cached encoding of the sailing state.

Source: https://github.com/MillionIntegrals/vel/pull/52 ("Configurable Evaluator cache"). The author used
vel's ``Evaluator``, which memoises every value it computes for a batch (``evaluator.get("model:...")``),
and needed two backward passes over the same part of the graph: with the cache, the second pass reads the
tensor the first backward already freed. The PR added a ``cache`` argument to ``get`` so a caller can ask
for a fresh computation instead of the memoised one.

Reduction: a small evaluator with a per-batch memo dict; a shared state encoder (wind, current, polar and
mark bearing features), a helm head imitating headings from an offline isochrone router (its own
optimizer over encoder and helm head), and an ETA critic regressing the time to the next mark (its own
optimizer over the critic head). Both losses fetch ``"encoded"`` from the evaluator of the same batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

CFG = {
    "n_features": 12,
    "n_headings": 16,
    "hidden": 48,
    "batch": 64,
    "steps": 6,
    "lr_helm": 2e-3,
    "lr_eta": 1e-3,
}


def synth_legs(n, n_features, n_headings):
    """Sailing states along a leg and the heading sector an isochrone router picked for each."""
    tws = 6 + 14 * torch.rand(n, 1)
    twa = math.pi * torch.rand(n, 1)
    current = 0.8 * torch.randn(n, 2)
    bearing = 2 * math.pi * torch.rand(n, 1)
    polar = torch.randn(n, n_features - 6)
    x = torch.cat([tws / 20, torch.cos(twa), torch.sin(twa), current, bearing / (2 * math.pi), polar], dim=1)
    best = ((bearing.squeeze(1) + 0.3 * twa.squeeze(1)) / (2 * math.pi) * n_headings).long() % n_headings
    eta = (30 + 60 * torch.rand(n) / (tws.squeeze(1) / 10)).unsqueeze(1) / 60
    return x, best, eta


class StateEncoder(nn.Module):
    def __init__(self, n_in, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())

    def forward(self, x):
        return self.net(x)


class BatchEvaluator:
    """Computes named quantities of one batch on demand and keeps them for the rest of the batch."""

    def __init__(self, encoder, helm_head, eta_head, batch):
        self.encoder = encoder
        self.helm_head = helm_head
        self.eta_head = eta_head
        self.batch = batch
        self._memo = {}

    def _compute(self, name):
        if name == "encoded":
            return self.encoder(self.batch["x"])
        if name == "heading_logits":
            return self.helm_head(self.get("encoded"))
        if name == "eta":
            return self.eta_head(self.get("encoded"))
        raise KeyError(name)

    def get(self, name, cache=True):
        if cache and name in self._memo:
            return self._memo[name]
        value = self._compute(name)
        if cache:
            self._memo[name] = value
        return value


def helm_loss_of(evaluator):
    logits = evaluator.get("heading_logits")
    return F.cross_entropy(logits, evaluator.batch["best_heading"])


def eta_loss_of(evaluator):
    eta = evaluator.eta_head(evaluator.get("encoded"))
    return F.smooth_l1_loss(eta, evaluator.batch["eta"])


def main():
    x, best, eta = synth_legs(CFG["batch"] * CFG["steps"], CFG["n_features"], CFG["n_headings"])

    encoder = StateEncoder(CFG["n_features"], CFG["hidden"])
    helm_head = nn.Linear(CFG["hidden"], CFG["n_headings"])
    eta_head = nn.Sequential(nn.Linear(CFG["hidden"], 16), nn.ReLU(), nn.Linear(16, 1))

    helm_opt = torch.optim.Adam(list(encoder.parameters()) + list(helm_head.parameters()), lr=CFG["lr_helm"])
    eta_opt = torch.optim.Adam(eta_head.parameters(), lr=CFG["lr_eta"])

    for step in range(CFG["steps"]):
        sl = slice(step * CFG["batch"], (step + 1) * CFG["batch"])
        batch = {"x": x[sl], "best_heading": best[sl], "eta": eta[sl]}
        evaluator = BatchEvaluator(encoder, helm_head, eta_head, batch)

        helm_opt.zero_grad()
        helm_loss = helm_loss_of(evaluator)
        helm_loss.backward()
        helm_opt.step()

        eta_opt.zero_grad()
        eta_loss = eta_loss_of(evaluator)
        eta_loss.backward()
        eta_opt.step()

        print(f"leg batch {step}: helm {helm_loss.item():.3f}  eta {eta_loss.item():.4f}")


if __name__ == "__main__":
    main()
