"""Transient light-curve classification with a time-aware GRU and a learned Bazin template bank.

Source: https://github.com/lululxvi/deepxde/pull/2077 ("Make basic BC/IC classes correctly
trainable"). DeepXDE wraps an initial/boundary condition's function with
``npfunc_range_autocache``, which on the PyTorch backend memoises ``func(X[beg:end])`` under the key
``(id(X), beg, end)``, since the training points never change. When the author moved the unknown,
trainable constant C of an inverse problem into the initial condition (``sin(C * x) * exp(-t)``),
the memo handed back the tensor computed at the first iteration, graph and all, and the second
``total_loss.backward()`` raised "Trying to backward through the graph a second time". The PR lets
a condition declare that it depends on trainable variables, and such functions are called without
the cache. The training setting is the writer's: light curves of supernova-like transients sampled
on one survey cadence (irregular epochs, per-object gaps), classified by a GRU fed the time since
the previous observation, plus a reconstruction head that mixes a bank of Bazin templates whose
rise and fall times are learned; the bank is evaluated on the cadence through a memoised helper in
the DeepXDE manner.
"""
import functools

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CLASSES, N_OBJ, N_T0 = 3, 48, 6


def range_autocache(func):
    """Memoise func(t[beg:end]) by the identity of the epoch array: the cadence never changes."""
    cache = {}

    @functools.wraps(func)
    def wrapper(t, beg, end):
        key = (id(t), beg, end)
        if key not in cache:
            cache[key] = func(t[beg:end])
        return cache[key]

    return wrapper


class BazinBank(nn.Module):
    """Bazin profiles exp(-(t-t0)/tau_fall) / (1 + exp(-(t-t0)/tau_rise)) for fixed t0, learned taus."""

    def __init__(self, t0s, n_shapes=2):
        super().__init__()
        self.register_buffer("t0s", t0s)
        self.log_tau_rise = nn.Parameter(torch.log(torch.linspace(2.0, 6.0, n_shapes)))
        self.log_tau_fall = nn.Parameter(torch.log(torch.linspace(15.0, 40.0, n_shapes)))

    def evaluate(self, t):
        dt = t[:, None, None] - self.t0s[None, :, None]  # (T, n_t0, n_shapes)
        rise, fall = self.log_tau_rise.exp(), self.log_tau_fall.exp()
        prof = torch.exp(-dt / fall) / (1 + torch.exp(-dt / rise))
        return prof.flatten(1)  # (T, n_t0 * n_shapes)


class TimeAwareGRU(nn.Module):
    def __init__(self, hidden=32, n_basis=N_T0 * 2):
        super().__init__()
        self.inp = nn.Linear(3, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.decay = nn.Linear(1, hidden)
        self.classifier = nn.Linear(hidden, N_CLASSES)
        self.mixer = nn.Linear(hidden, n_basis)

    def forward(self, flux, mask, dt):
        h = torch.zeros(flux.shape[0], self.cell.hidden_size)
        for k in range(flux.shape[1]):
            gamma = torch.exp(-F.relu(self.decay(dt[:, k:k + 1])))  # decay memory over the gap
            x = torch.relu(self.inp(torch.stack([flux[:, k], mask[:, k], dt[:, k] / 10.0], 1)))
            h_new = self.cell(x, gamma * h)
            h = torch.where(mask[:, k:k + 1] > 0, h_new, h)
        return self.classifier(h), F.softplus(self.mixer(h))


def survey(n):
    """One irregular cadence; per-class transient shapes; random gaps and noise."""
    times = torch.sort(torch.rand(24) * 100.0).values
    labels = torch.randint(N_CLASSES, (n,))
    t0 = 20 + 40 * torch.rand(n)
    rise = torch.tensor([2.0, 5.0, 3.0])[labels] * (1 + 0.2 * torch.rand(n))
    fall = torch.tensor([15.0, 40.0, 25.0])[labels] * (1 + 0.2 * torch.rand(n))
    amp = 0.5 + torch.rand(n)
    dtm = times[None] - t0[:, None]
    flux = amp[:, None] * torch.exp(-dtm / fall[:, None]) / (1 + torch.exp(-dtm / rise[:, None]))
    flux = flux + 0.03 * torch.randn(n, len(times))
    mask = (torch.rand(n, len(times)) > 0.25).float()
    return times, flux * mask, mask, labels


times, flux_all, mask_all, labels_all = survey(N_OBJ)
gaps = torch.diff(times, prepend=times[:1])
bank = BazinBank(torch.linspace(10.0, 70.0, N_T0))
basis_on_cadence = range_autocache(bank.evaluate)
model = TimeAwareGRU()
optimizer = torch.optim.Adam(list(model.parameters()) + list(bank.parameters()), lr=3e-3)

for epoch in range(3):
    for start in range(0, N_OBJ, 12):
        flux, mask, y = flux_all[start:start + 12], mask_all[start:start + 12], labels_all[start:start + 12]
        dt = gaps.expand_as(flux)
        logits, weights = model(flux, mask, dt)
        basis = basis_on_cadence(times, 0, len(times))  # (T, n_basis)
        recon = weights @ basis.T
        fit_loss = ((recon - flux) ** 2 * mask).sum() / mask.sum()
        cls_loss = F.cross_entropy(logits, y)
        loss = cls_loss + 5.0 * fit_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    acc = (logits.argmax(1) == y).float().mean().item()
    print(f"epoch {epoch}: loss {loss.item():.4f} acc {acc:.2f} tau_rise {bank.log_tau_rise.exp().tolist()}")
