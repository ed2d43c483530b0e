"""Sparse variational Gaussian process regression (whitened SVGP, GPyTorch layout).

Reduced from https://github.com/cornellius-gp/gpytorch/issues/1754: the author trains an
approximate GP with inducing points, a Cholesky variational distribution and an RBF
kernel whose lengthscale is learned, minimising the negative ELBO with Adam. Like
GPyTorch's variational strategy, the model memoises the Cholesky factor of the
inducing-point kernel matrix, and clears that cache when it is put into training mode.
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)


class RBFKernel(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw_lengthscale = nn.Parameter(torch.zeros(1))
        self.raw_outputscale = nn.Parameter(torch.zeros(1))

    def forward(self, x1, x2):
        lengthscale = nn.functional.softplus(self.raw_lengthscale)
        outputscale = nn.functional.softplus(self.raw_outputscale)
        dist = torch.cdist(x1 / lengthscale, x2 / lengthscale).pow(2)
        return outputscale * torch.exp(-0.5 * dist)

    def diag(self, x):
        return nn.functional.softplus(self.raw_outputscale).expand(x.shape[0])


class ApproximateGPModel(nn.Module):
    def __init__(self, inducing_points, jitter=1e-4):
        super().__init__()
        m = inducing_points.shape[0]
        self.register_buffer("inducing_points", inducing_points)
        self.variational_mean = nn.Parameter(torch.zeros(m))
        self.chol_variational_covar = nn.Parameter(torch.eye(m))
        self.covar_module = RBFKernel()
        self.jitter = jitter
        self._cached_chol = None

    def train(self, mode=True):
        self._cached_chol = None
        return super().train(mode)

    def prior_chol(self):
        if self._cached_chol is None:
            z = self.inducing_points
            kzz = self.covar_module(z, z) + self.jitter * torch.eye(z.shape[0])
            self._cached_chol = torch.linalg.cholesky(kzz)
        return self._cached_chol

    def forward(self, x):
        lz = self.prior_chol()
        kxz = self.covar_module(x, self.inducing_points)
        a = torch.linalg.solve_triangular(lz, kxz.T, upper=False)
        s_chol = torch.tril(self.chol_variational_covar)
        mean = a.T @ self.variational_mean
        var = self.covar_module.diag(x) - a.pow(2).sum(0) + (a.T @ s_chol).pow(2).sum(1)
        return mean, var.clamp_min(1e-6)

    def kl_divergence(self):
        s_chol = torch.tril(self.chol_variational_covar)
        m = self.variational_mean.shape[0]
        logdet = 2 * torch.log(torch.diagonal(s_chol).abs()).sum()
        return 0.5 * (s_chol.pow(2).sum() + self.variational_mean.pow(2).sum() - m - logdet)


class GaussianLikelihood(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw_noise = nn.Parameter(torch.tensor([-2.0]))

    def expected_log_prob(self, y, mean, var):
        noise = nn.functional.softplus(self.raw_noise)
        return -0.5 * (math.log(2 * math.pi) + torch.log(noise) + ((y - mean).pow(2) + var) / noise)


def negative_elbo(model, likelihood, x, y, num_data):
    mean, var = model(x)
    ell = likelihood.expected_log_prob(y, mean, var).sum() * (num_data / x.shape[0])
    return -(ell - model.kl_divergence()) / num_data


def make_data(n=200):
    x = torch.rand(n, 1) * 6
    y = torch.sin(x[:, 0]) + 0.1 * torch.randn(n)
    return x, y


if __name__ == "__main__":
    train_x, train_y = make_data()
    model = ApproximateGPModel(inducing_points=torch.linspace(0, 6, 16)[:, None])
    likelihood = GaussianLikelihood()
    optimizer = torch.optim.Adam([*model.parameters(), *likelihood.parameters()], lr=0.05)
    model.train()
    likelihood.train()
    for i in range(20):
        optimizer.zero_grad()
        idx = torch.randint(len(train_x), (64,))
        loss = negative_elbo(model, likelihood, train_x[idx], train_y[idx], num_data=len(train_x))
        loss.backward()
        optimizer.step()
        if i % 5 == 0:
            print(f"iter {i} | -elbo {loss.item():.4f}")
