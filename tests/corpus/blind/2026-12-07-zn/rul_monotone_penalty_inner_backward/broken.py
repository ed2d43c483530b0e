"""Remaining-useful-life prediction from bearing vibration, with a monotonicity penalty on RUL vs time.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/1771 -- "Is it safe to call
.backward() on tensors inside .training_step? It is the case for example if loss depends on the
gradients." Maintainer: "Might need to use retain_graph if you do" -- the trainer then calls backward
on the loss returned by training_step, through the same graph.

What the author was doing: a small framework-style module (training_step returns the loss, a generic
fit loop does zero_grad / backward / step) predicts RUL from a window of vibration spectra plus the
normalised operating time. Physically RUL must fall as operating time passes, so a penalty on
dRUL/dt above a negative margin (computed with autograd.grad, create_graph=True) is added. Because
the penalty "depends on the gradients", the author backwards it right inside training_step and
returns the RUL regression loss for the loop to backward. The training setting is the writer's;
the backward inside training_step on a graph the returned loss shares is the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_BINS, WIN = 16, 8     # spectral bins per snapshot, snapshots per window


class VibrationEncoder(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(N_BINS, hidden, 3, padding=1), nn.Tanh(),
                                  nn.Conv1d(hidden, hidden, 3, padding=1), nn.Tanh())

    def forward(self, spec):            # spec: (B, WIN, N_BINS)
        return self.conv(spec.transpose(1, 2)).mean(-1)


class RULModule(nn.Module):
    def __init__(self, mono_weight=0.5, margin=0.5):
        super().__init__()
        self.margin = margin
        self.encoder = VibrationEncoder()
        self.head = nn.Sequential(nn.Linear(32 + 1, 32), nn.Tanh(), nn.Linear(32, 1))
        self.mono_weight = mono_weight

    def forward(self, spec, t):
        return self.head(torch.cat([self.encoder(spec), t], dim=-1)).squeeze(-1)

    def training_step(self, batch):
        spec, t, rul = batch
        t = t.clone().requires_grad_(True)
        pred = self(spec, t)
        rul_loss = F.smooth_l1_loss(pred, rul)
        # RUL must fall as operating time passes: penalise dRUL/dt above -margin
        drul_dt, = torch.autograd.grad(pred.sum(), t, create_graph=True)
        mono_penalty = self.mono_weight * F.relu(drul_dt + self.margin).pow(2).mean()
        mono_penalty.backward()
        return rul_loss


def make_run_to_failure(n_bearings=6, life=40):
    """Synthetic run-to-failure histories: fault band energy grows as the bearing degrades."""
    specs, times, ruls = [], [], []
    for _ in range(n_bearings):
        base = torch.rand(N_BINS) * 0.5
        for k in range(life - WIN):
            age = torch.arange(k, k + WIN).float() / life
            fault = torch.exp(4 * age).unsqueeze(-1) * torch.linspace(0, 1, N_BINS) ** 2
            specs.append(base + 0.1 * fault + 0.05 * torch.randn(WIN, N_BINS))
            times.append(torch.tensor([(k + WIN) / life]))
            ruls.append(torch.tensor(1.0 - (k + WIN) / life))
    return torch.stack(specs), torch.stack(times), torch.stack(ruls)


def fit(module, optimizer, data, epochs=2, batch_size=32):
    spec, t, rul = data
    for epoch in range(epochs):
        perm = torch.randperm(spec.shape[0])
        for i in range(0, 96, batch_size):
            idx = perm[i:i + batch_size]
            optimizer.zero_grad()
            loss = module.training_step((spec[idx], t[idx], rul[idx]))
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} rul loss {loss.item():.4f}")


module = RULModule()
optimizer = torch.optim.Adam(module.parameters(), lr=2e-3)
fit(module, optimizer, make_run_to_failure())
