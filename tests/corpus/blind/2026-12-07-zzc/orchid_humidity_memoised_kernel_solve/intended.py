"""Orchid-house humidity surrogate: a kernel regressor whose reference solve is memoised on the module.

Source: https://github.com/cornellius-gp/gpytorch/issues/554
("Repeated posterior evaluation (and backward) with same base_samples raises second backward issue").
The reporter evaluated a GPyTorch posterior several times and called backward each time; the
prediction caches (computed once from the training data and kept on the model) still carried the
graph to the hyperparameters, so the second backward ran into the part of the graph the first one
had freed. It worked only when the caches were detached.

Reduction: a Phalaenopsis greenhouse controller predicts relative humidity one hour ahead from
outdoor temperature, solar radiation, vent opening, mist-pump duty and time of day. The surrogate is
a kernel regressor over a fixed set of reference readings with a learned mean head; the Cholesky solve
against the reference readings is memoised on the module the first time forward runs and reused by
every later call, while the training loop keeps fitting the lengthscales, the output scale and the
mean head.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "n_reference": 48,
    "n_train": 192,
    "batch_size": 32,
    "epochs": 3,
    "lr": 0.03,
    "noise": 0.05,
    "features": ["outdoor_temp", "solar", "vent_open", "mist_duty", "hour_sin"],
}


def orchid_house_readings(n, gen):
    """Scaled sensor readings and next-hour relative humidity (fraction)."""
    x = torch.rand(n, len(CONFIG["features"]), generator=gen)
    rh = (
        0.62
        + 0.18 * torch.sin(math.pi * x[:, 0])
        - 0.22 * x[:, 2]
        + 0.30 * x[:, 3]
        - 0.08 * x[:, 1]
        + 0.05 * x[:, 4]
        + 0.02 * torch.randn(n, generator=gen)
    )
    return x, rh


class HumiditySurrogate(nn.Module):
    def __init__(self, ref_x, ref_y, noise):
        super().__init__()
        self.register_buffer("ref_x", ref_x)
        self.register_buffer("ref_y", ref_y)
        self.noise = noise
        self.log_lengthscale = nn.Parameter(torch.full((ref_x.shape[1],), -0.5))
        self.log_outputscale = nn.Parameter(torch.tensor(-1.0))
        self.mean_head = nn.Linear(ref_x.shape[1], 1)
        self._ref_weights = None

    def kernel(self, a, b):
        ls = self.log_lengthscale.exp()
        sq = torch.cdist(a / ls, b / ls).pow(2)
        return self.log_outputscale.exp() * torch.exp(-0.5 * sq)

    def train(self, mode=True):
        self._ref_weights = None
        return super().train(mode)

    def solve_reference(self):
        n = self.ref_x.shape[0]
        k_ref = self.kernel(self.ref_x, self.ref_x) + self.noise * torch.eye(n)
        resid = self.ref_y - self.mean_head(self.ref_x).squeeze(-1)
        chol = torch.linalg.cholesky(k_ref)
        return torch.cholesky_solve(resid.unsqueeze(-1), chol).squeeze(-1)

    def reference_weights(self):
        if self.training:
            return self.solve_reference()
        if self._ref_weights is None:
            self._ref_weights = self.solve_reference().detach()
        return self._ref_weights

    def forward(self, x):
        weights = self.reference_weights()
        return self.mean_head(x).squeeze(-1) + self.kernel(x, self.ref_x) @ weights


def fit_surrogate(surrogate, hyper_opt, train_x, train_y, cfg):
    n = train_x.shape[0]
    history = []
    for epoch in range(cfg["epochs"]):
        surrogate.train()
        perm = torch.randperm(n)
        running = 0.0
        for start in range(0, n, cfg["batch_size"]):
            idx = perm[start : start + cfg["batch_size"]]
            pred = surrogate(train_x[idx])
            fit_loss = F.mse_loss(pred, train_y[idx])
            hyper_opt.zero_grad()
            fit_loss.backward()
            hyper_opt.step()
            running += fit_loss.item() * len(idx)
        history.append(running / n)
        print(f"epoch {epoch}: humidity mse {history[-1]:.5f}")
    return history


def main():
    torch.manual_seed(11)
    gen = torch.Generator().manual_seed(11)
    ref_x, ref_y = orchid_house_readings(CONFIG["n_reference"], gen)
    train_x, train_y = orchid_house_readings(CONFIG["n_train"], gen)
    val_x, val_y = orchid_house_readings(64, gen)

    surrogate = HumiditySurrogate(ref_x, ref_y, CONFIG["noise"])
    hyper_opt = torch.optim.Adam(surrogate.parameters(), lr=CONFIG["lr"])
    fit_surrogate(surrogate, hyper_opt, train_x, train_y, CONFIG)

    surrogate.eval()
    with torch.no_grad():
        val_mse = F.mse_loss(surrogate(val_x), val_y).item()
    print(f"validation mse {val_mse:.5f}, lengthscales {surrogate.log_lengthscale.exp().tolist()}")


if __name__ == "__main__":
    main()
