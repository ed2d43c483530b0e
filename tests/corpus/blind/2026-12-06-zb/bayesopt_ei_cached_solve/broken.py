"""Bayesian optimisation of a 2-D black box with a hand-written exact GP and expected improvement.

Report: https://github.com/cornellius-gp/gpytorch/pull/228 ("Detach mean and covar caches at
test time"). A GP's predictive caches (the solve K^-1 (y - m) and its Cholesky factor) are
computed at the first prediction while the hyperparameters require grad, and kept for every
later prediction. Optimising an acquisition function over the candidate x with Adam then
backwards through those cached tensors at every step: the first backward frees their graph,
and the second step raises "Trying to backward through the graph a second time". The PR
detaches the caches at test time.

What the author was doing: a small BO loop. Each round fits the GP's kernel hyperparameters
by maximising the exact marginal likelihood (Adam, warm-started from the previous round),
then maximises expected improvement over a candidate point by gradient ascent, evaluates the
black box there and appends the point. The GP module caches its solve in ``posterior`` the
way GPyTorch's prediction strategy does.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

DIM = 2
N_INIT = 8
ROUNDS = 4
FIT_STEPS = 8
ACQ_STEPS = 25


def black_box(x):
    """The expensive function we minimise (synthetic stand-in)."""
    return torch.sin(3.0 * x[:, 0]) * torch.cos(2.0 * x[:, 1]) + 0.3 * (x ** 2).sum(-1)


class ExactGP(nn.Module):
    def __init__(self, train_x, train_y):
        super().__init__()
        self.raw_lengthscale = nn.Parameter(torch.zeros(DIM))
        self.raw_outputscale = nn.Parameter(torch.tensor(0.0))
        self.raw_noise = nn.Parameter(torch.tensor(-3.0))
        self.mean_const = nn.Parameter(torch.tensor(0.0))
        self.set_train_data(train_x, train_y)

    def set_train_data(self, x, y):
        self.train_x, self.train_y = x, y
        self._chol = None
        self._alpha = None

    @property
    def noise(self):
        return F.softplus(self.raw_noise) + 1e-4

    def kernel(self, a, b):
        ls = F.softplus(self.raw_lengthscale) + 1e-3
        d2 = ((a[:, None, :] - b[None, :, :]) / ls).pow(2).sum(-1)
        return F.softplus(self.raw_outputscale) * torch.exp(-0.5 * d2)

    def neg_mll(self):
        x, y = self.train_x, self.train_y
        n = x.shape[0]
        K = self.kernel(x, x) + self.noise * torch.eye(n)
        L = torch.linalg.cholesky(K)
        r = (y - self.mean_const).unsqueeze(-1)
        alpha = torch.cholesky_solve(r, L)
        nll = 0.5 * (r * alpha).sum() + torch.log(torch.diagonal(L)).sum() + 0.5 * n * math.log(2 * math.pi)
        return nll / n

    def posterior(self, xs):
        if self._alpha is None:
            # prediction caches, computed once per training set
            x, y = self.train_x, self.train_y
            K = self.kernel(x, x) + self.noise * torch.eye(x.shape[0])
            self._chol = torch.linalg.cholesky(K)
            self._alpha = torch.cholesky_solve((y - self.mean_const).unsqueeze(-1), self._chol)
        ks = self.kernel(xs, self.train_x)
        mean = self.mean_const + (ks @ self._alpha).squeeze(-1)
        v = torch.cholesky_solve(ks.T, self._chol)
        var = F.softplus(self.raw_outputscale) - (ks * v.T).sum(-1)
        return mean, var.clamp_min(1e-9)


def expected_improvement(gp, x, best_f):
    mean, var = gp.posterior(x)
    sigma = var.sqrt()
    z = (best_f - mean) / sigma
    normal = torch.distributions.Normal(0.0, 1.0)
    return sigma * (z * normal.cdf(z) + torch.exp(normal.log_prob(z)))


train_x = torch.rand(N_INIT, DIM) * 2 - 1
train_y = black_box(train_x)

gp = ExactGP(train_x, train_y)
gp_opt = torch.optim.Adam(gp.parameters(), lr=0.05)
x_cand = torch.zeros(1, DIM, requires_grad=True)  # one candidate tensor, restarted every round
acq_opt = torch.optim.Adam([x_cand], lr=0.05)

for rnd in range(ROUNDS):
    gp.set_train_data(train_x, train_y)
    for it in range(FIT_STEPS):
        gp_opt.zero_grad()
        nll = gp.neg_mll()
        nll.backward()
        gp_opt.step()

    best_f = train_y.min()
    with torch.no_grad():
        x_cand.copy_(torch.rand(1, DIM) * 2 - 1)
    acq_opt.state.clear()
    for it in range(ACQ_STEPS):
        acq_opt.zero_grad()
        acq_loss = -expected_improvement(gp, x_cand, best_f).sum()
        acq_loss.backward()
        acq_opt.step()
        with torch.no_grad():
            x_cand.clamp_(-1.0, 1.0)

    new_x = x_cand.detach()
    new_y = black_box(new_x)
    train_x = torch.cat([train_x, new_x])
    train_y = torch.cat([train_y, new_y])
    print(f"round {rnd}: nll {nll.item():.3f} EI {-acq_loss.item():.4f} best {train_y.min().item():.4f}")
