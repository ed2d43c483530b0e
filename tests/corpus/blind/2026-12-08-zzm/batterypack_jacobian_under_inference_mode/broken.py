"""Learned extended Kalman filter for battery-pack state of charge; test runs under inference mode.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/19910
("element 0 of tensors does not require grad and does not have a grad_fn in
"test_step" and "validation_step"").  The reporter (training a Kalman-filter
model) computes a Jacobian with ``torch.autograd.grad`` inside ``with
torch.enable_grad():`` in their LightningModule's steps.  Training and validation
work, but ``trainer.test`` fails with "element 0 of tensors does not require grad
and does not have a grad_fn"; printing ``torch.is_inference_mode_enabled()``
showed False in training/validation and True in test.  ``enable_grad`` re-enables
grad mode but cannot leave inference mode, so nothing is recorded.  The issue was
closed as working as intended; the documented fix is to run evaluation without
inference mode (``Trainer(inference_mode=False)``, i.e. plain ``no_grad``, under
which ``enable_grad`` does work).

Reduction: a small Lightning-like module/trainer pair in plain PyTorch.  The
trainer's ``fit`` trains with Adam and validates under ``torch.no_grad()``; its
``test`` wraps the loop in ``torch.inference_mode()`` unless
``inference_mode=False``, as Lightning does.  The module is a learned EKF that
tracks a pack's state of charge and RC-polarisation voltage from current and
terminal voltage; the transition and measurement models carry small MLP
corrections, and their Jacobians (F and H) come from ``torch.autograd.grad`` at
the detached linearisation point inside ``torch.enable_grad()``.  Data are a
synthetic drive-cycle current profile with a true OCV curve and RC dynamics.
"""
import torch
import torch.nn as nn

torch.manual_seed(21)

HPARAMS = {
    "cells": 8,
    "steps": 12,
    "dt": 10.0,
    "capacity_as": 3600.0 * 5.0,
    "epochs": 2,
    "batches_per_epoch": 1,
    "lr": 3e-3,
    "hidden": 16,
}


def true_ocv(soc):
    return 3.2 + 0.9 * soc - 0.25 * torch.exp(-12 * soc)


def make_drive_cycles(hp, n_batches):
    batches = []
    for _ in range(n_batches):
        current = 5 + 10 * torch.rand(hp["cells"], hp["steps"])       # discharge, A
        soc = torch.empty(hp["cells"], hp["steps"])
        v_rc = torch.zeros(hp["cells"])
        s = 0.6 + 0.35 * torch.rand(hp["cells"])
        volt = torch.empty(hp["cells"], hp["steps"])
        for t in range(hp["steps"]):
            s = s - hp["dt"] * current[:, t] / hp["capacity_as"]
            v_rc = v_rc * 0.9 + 0.002 * current[:, t]
            soc[:, t] = s
            volt[:, t] = true_ocv(s) - 0.01 * current[:, t] - v_rc + 0.003 * torch.randn(hp["cells"])
        batches.append({"current": current, "voltage": volt, "soc": soc})
    return batches


class TransitionModel(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.dt, self.q = hp["dt"], hp["capacity_as"]
        self.decay = nn.Parameter(torch.tensor(0.8))
        self.gain = nn.Parameter(torch.tensor(0.001))
        self.correction = nn.Sequential(nn.Linear(3, hp["hidden"]), nn.Tanh(), nn.Linear(hp["hidden"], 2))

    def forward(self, x, i):
        soc = x[:, 0] - self.dt * i / self.q
        v_rc = self.decay * x[:, 1] + self.gain * i
        base = torch.stack([soc, v_rc], dim=1)
        return base + 1e-3 * self.correction(torch.cat([x, i.unsqueeze(1) / 10], dim=1))


class MeasurementModel(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.ocv = nn.Sequential(nn.Linear(1, hp["hidden"]), nn.Tanh(), nn.Linear(hp["hidden"], 1))
        self.r0 = nn.Parameter(torch.tensor(0.02))

    def forward(self, x, i):
        ocv = 3.2 + 0.9 * x[:, :1] + 0.1 * self.ocv(x[:, :1])
        return ocv - self.r0 * i.unsqueeze(1) - x[:, 1:2]


def jacobian(fn, x, i, create_graph):
    """Rows of d fn / d x at the (detached) linearisation point."""
    with torch.enable_grad():
        x_lin = x.detach().requires_grad_(True)
        y = fn(x_lin, i)
        rows = [torch.autograd.grad(y[:, k].sum(), x_lin, retain_graph=True,
                                    create_graph=create_graph)[0] for k in range(y.shape[1])]
    return torch.stack(rows, dim=1)


class SocFilterModule(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.transition = TransitionModel(hp)
        self.measurement = MeasurementModel(hp)
        self.Q = torch.diag(torch.tensor([1e-6, 1e-6]))
        self.R = torch.tensor([[1e-4]])

    def filter(self, current, voltage):
        b = current.shape[0]
        x = torch.stack([torch.full((b,), 0.5), torch.zeros(b)], dim=1)
        P = torch.diag(torch.tensor([0.05, 1e-4])).expand(b, 2, 2)
        estimates = []
        for t in range(current.shape[1]):
            i = current[:, t]
            F_t = jacobian(self.transition, x, i, create_graph=self.training)
            x = self.transition(x, i)
            P = F_t @ P @ F_t.transpose(1, 2) + self.Q
            H_t = jacobian(self.measurement, x, i, create_graph=self.training)
            innov = voltage[:, t:t + 1] - self.measurement(x, i)
            S = H_t @ P @ H_t.transpose(1, 2) + self.R
            K = P @ H_t.transpose(1, 2) @ torch.linalg.inv(S)
            x = x + (K @ innov.unsqueeze(2)).squeeze(2)
            P = (torch.eye(2) - K @ H_t) @ P
            estimates.append(x[:, 0])
        return torch.stack(estimates, dim=1)

    def training_step(self, batch):
        soc_hat = self.filter(batch["current"], batch["voltage"])
        return nn.functional.mse_loss(soc_hat, batch["soc"])

    def validation_step(self, batch):
        return nn.functional.mse_loss(self.filter(batch["current"], batch["voltage"]), batch["soc"])

    def test_step(self, batch):
        soc_hat = self.filter(batch["current"], batch["voltage"])
        return (soc_hat - batch["soc"]).abs().max()


class Trainer:
    def __init__(self, max_epochs, lr, inference_mode=True):
        self.max_epochs = max_epochs
        self.lr = lr
        self.inference_mode = inference_mode

    def _eval_context(self):
        return torch.inference_mode() if self.inference_mode else torch.no_grad()

    def fit(self, module, train_batches, val_batches):
        optimizer = torch.optim.Adam(module.parameters(), lr=self.lr)
        for epoch in range(self.max_epochs):
            module.train()
            for batch in train_batches:
                optimizer.zero_grad()
                loss = module.training_step(batch)
                loss.backward()
                optimizer.step()
            module.eval()
            with torch.no_grad():
                val = sum(module.validation_step(b).item() for b in val_batches) / len(val_batches)
            print(f"epoch {epoch}: train {loss.item():.2e} val {val:.2e}")

    def test(self, module, test_batches):
        module.eval()
        with self._eval_context():
            worst = max(module.test_step(b).item() for b in test_batches)
        print(f"test: worst SoC error {worst:.4f}")
        return worst


def main():
    hp = HPARAMS
    train_batches = make_drive_cycles(hp, hp["batches_per_epoch"])
    val_batches = make_drive_cycles(hp, 1)
    test_batches = make_drive_cycles(hp, 1)
    module = SocFilterModule(hp)
    trainer = Trainer(max_epochs=hp["epochs"], lr=hp["lr"])
    trainer.fit(module, train_batches, val_batches)
    trainer.test(module, test_batches)


if __name__ == "__main__":
    main()
