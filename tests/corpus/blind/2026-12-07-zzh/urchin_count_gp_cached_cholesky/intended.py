"""Kelp-forest urchin counts: a feature encoder with a sparse Gaussian-process head, fitted in two phases.

Source: https://github.com/cornellius-gp/gpytorch/issues/2689

The report: a variational GP (``VariationalStrategy`` with a Cholesky variational
distribution) put in ``model.eval()`` raised "Trying to backward through the graph a
second time" on the second backward pass through its predictions. In eval mode the
strategy memoises the Cholesky factor of the inducing-point covariance, and that cached
factor still holds the graph of the first call (it depends on the kernel
hyperparameters), so the second backward walks into a graph already freed. The proposed
fix (gpytorch PR #2737) drops the cached factors once a backward has used them, so that
each evaluation builds its own.

Here a survey team fits a model that maps per-quadrat habitat features (depth, kelp
stipe density, substrate rugosity, temperature ...) to log purple-urchin counts. The
head is a hand-written sparse GP (RBF kernel to fixed inducing points, learnable
lengthscale and inducing means) that memoises its inducing Cholesky factor whenever it
runs in eval mode. Phase one trains everything in train mode; phase two fine-tunes the GP head
on a newly surveyed transect with its own optimizer, the encoder frozen and the model
switched to eval mode (to turn off the encoder's dropout); its second step fails.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SETTINGS = {
    "n_features": 7,
    "embed": 6,
    "n_inducing": 10,
    "jitter": 1e-4,
    "phase1_steps": 4,
    "phase2_steps": 4,
    "batch": 32,
    "lr": 1e-2,
    "finetune_lr": 3e-3,
}


def survey_transect(n, n_features, gen, shift=0.0):
    """Synthetic quadrats: urchins rise with rugosity and fall with stipe density."""
    x = torch.randn(n, n_features, generator=gen)
    x[:, 0] += shift
    rate = 1.5 + 0.8 * x[:, 2] - 0.6 * x[:, 1] + 0.3 * torch.sin(x[:, 0])
    counts = torch.poisson(torch.exp(rate.clamp(max=3.0)), generator=gen)
    return x, torch.log1p(counts)


class HabitatEncoder(nn.Module):
    def __init__(self, n_features, embed):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(n_features, 16), nn.GELU(), nn.Dropout(0.1), nn.Linear(16, embed)
        )

    def forward(self, x):
        return self.layers(x)


class SparseGPHead(nn.Module):
    """Predictive mean K_xz K_zz^{-1} m with a memoised Cholesky factor of K_zz in eval mode."""

    def __init__(self, embed, n_inducing, jitter):
        super().__init__()
        self.register_buffer("inducing", torch.linspace(-2, 2, n_inducing).unsqueeze(1).repeat(1, embed))
        self.log_lengthscale = nn.Parameter(torch.zeros(1))
        self.inducing_mean = nn.Parameter(torch.zeros(n_inducing, 1))
        self.jitter = jitter
        self._chol_cache = None

    def kernel(self, a, b):
        ls = self.log_lengthscale.exp()
        d2 = torch.cdist(a / ls, b / ls).pow(2)
        return torch.exp(-0.5 * d2)

    def inducing_cholesky(self):
        if not self.training and self._chol_cache is not None:
            return self._chol_cache
        k_zz = self.kernel(self.inducing, self.inducing)
        k_zz = k_zz + self.jitter * torch.eye(k_zz.shape[0])
        chol = torch.linalg.cholesky(k_zz)
        if not self.training:
            self._chol_cache = chol
        return chol

    def train(self, mode=True):
        self._chol_cache = None
        return super().train(mode)

    def forward(self, h):
        chol = self.inducing_cholesky()
        alpha = torch.cholesky_solve(self.inducing_mean, chol)
        if torch.is_grad_enabled():
            self._chol_cache = None
        return self.kernel(h, self.inducing) @ alpha


class UrchinModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.encoder = HabitatEncoder(cfg["n_features"], cfg["embed"])
        self.gp = SparseGPHead(cfg["embed"], cfg["n_inducing"], cfg["jitter"])

    def forward(self, x):
        return self.gp(self.encoder(x)).squeeze(-1)


def run_phase(model, optimizer, x, y, steps, batch, label):
    n = x.shape[0]
    for step in range(steps):
        idx = torch.arange(step * batch, (step + 1) * batch) % n
        pred = model(x[idx])
        count_loss = F.mse_loss(pred, y[idx])
        optimizer.zero_grad()
        count_loss.backward()
        optimizer.step()
        print(f"{label} step {step}: mse {count_loss.item():.4f} rmse {math.sqrt(count_loss.item()):.3f}")


def main():
    cfg = SETTINGS
    torch.manual_seed(11)
    gen = torch.Generator().manual_seed(11)
    x_old, y_old = survey_transect(128, cfg["n_features"], gen)
    x_new, y_new = survey_transect(96, cfg["n_features"], gen, shift=0.5)

    model = UrchinModel(cfg)
    pretrain_opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    finetune_opt = torch.optim.Adam(model.gp.parameters(), lr=cfg["finetune_lr"])

    model.train()
    run_phase(model, pretrain_opt, x_old, y_old, cfg["phase1_steps"], cfg["batch"], "phase1")

    model.eval()
    for p in model.encoder.parameters():
        p.requires_grad_(False)
    run_phase(model, finetune_opt, x_new, y_new, cfg["phase2_steps"], cfg["batch"], "phase2")


if __name__ == "__main__":
    main()
