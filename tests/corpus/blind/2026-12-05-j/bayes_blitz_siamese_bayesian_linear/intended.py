"""Bayesian siamese network (Bayes by Backprop layers, BLiTZ layout).

Reduced from https://github.com/piEsposito/blitz-bayesian-deep-learning/issues/20: the
author builds a siamese network out of Bayesian linear layers (a Gaussian variational
posterior over every weight, a scale-mixture prior, the KL term collected from the
layers) and trains it with a contrastive loss on pairs, so each training step runs two
forward passes through the same encoder before one backward.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class GaussianVariational(nn.Module):
    def __init__(self, mu, rho):
        super().__init__()
        self.mu = mu
        self.rho = rho
        self.w = None
        self.sigma = None
        self.eps_w = torch.empty(mu.size())

    def sample(self):
        self.eps_w = torch.empty_like(self.mu).normal_()
        self.sigma = torch.log1p(torch.exp(self.rho))
        self.w = self.mu + self.sigma * self.eps_w
        return self.w

    def log_posterior(self):
        log_sqrt2pi = math.log(math.sqrt(2 * math.pi))
        log_posteriors = -log_sqrt2pi - torch.log(self.sigma) - ((self.w - self.mu) ** 2) / (2 * self.sigma**2) - 0.5
        return log_posteriors.sum()


class ScaleMixturePrior:
    def __init__(self, pi=0.5, sigma1=1.0, sigma2=0.0025):
        self.pi = pi
        self.dist1 = torch.distributions.Normal(0, sigma1)
        self.dist2 = torch.distributions.Normal(0, sigma2)

    def log_prior(self, w):
        prob_n1 = torch.exp(self.dist1.log_prob(w))
        prob_n2 = torch.exp(self.dist2.log_prob(w))
        prior_pdf = self.pi * prob_n1 + (1 - self.pi) * prob_n2 + 1e-6
        return torch.log(prior_pdf).sum()


class BayesianLinear(nn.Module):
    def __init__(self, in_features, out_features, posterior_rho_init=-6.0):
        super().__init__()
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features).normal_(0, 0.1))
        self.weight_rho = nn.Parameter(torch.empty(out_features, in_features).normal_(posterior_rho_init, 0.1))
        self.bias_mu = nn.Parameter(torch.empty(out_features).normal_(0, 0.1))
        self.bias_rho = nn.Parameter(torch.empty(out_features).normal_(posterior_rho_init, 0.1))
        self.weight_sampler = GaussianVariational(self.weight_mu, self.weight_rho)
        self.bias_sampler = GaussianVariational(self.bias_mu, self.bias_rho)
        self.weight_prior = ScaleMixturePrior()
        self.bias_prior = ScaleMixturePrior()
        self.log_prior = 0
        self.log_variational_posterior = 0

    def forward(self, x):
        w = self.weight_sampler.sample()
        b = self.bias_sampler.sample()
        self.log_variational_posterior = self.weight_sampler.log_posterior() + self.bias_sampler.log_posterior()
        self.log_prior = self.weight_prior.log_prior(w) + self.bias_prior.log_prior(b)
        return F.linear(x, w, b)


class BayesianSiameseNet(nn.Module):
    def __init__(self, in_features=16, hidden=32, emb=8):
        super().__init__()
        self.blinear1 = BayesianLinear(in_features, hidden)
        self.blinear2 = BayesianLinear(hidden, emb)

    def forward_once(self, x):
        return self.blinear2(F.relu(self.blinear1(x)))

    def forward(self, x1, x2):
        return self.forward_once(x1), self.forward_once(x2)

    def nn_kl_divergence(self):
        kl = 0
        for module in self.modules():
            if isinstance(module, BayesianLinear):
                kl = kl + module.log_variational_posterior - module.log_prior
        return kl


def contrastive_loss(out1, out2, label, margin=2.0):
    dist = F.pairwise_distance(out1, out2)
    return torch.mean((1 - label) * dist.pow(2) + label * torch.clamp(margin - dist, min=0.0).pow(2))


def make_pairs(n=128, in_features=16):
    x1 = torch.randn(n, in_features)
    same = torch.rand(n) < 0.5
    x2 = torch.where(same[:, None], x1 + 0.1 * torch.randn(n, in_features), torch.randn(n, in_features))
    label = (~same).float()
    return x1, x2, label


def train(net, optimizer, x1, x2, label, epochs=3, batch_size=32, complexity_cost_weight=1e-4):
    for epoch in range(epochs):
        for start in range(0, len(x1), batch_size):
            a, b, y = x1[start : start + batch_size], x2[start : start + batch_size], label[start : start + batch_size]
            optimizer.zero_grad()
            out1, out2 = net(a, b)
            loss = contrastive_loss(out1, out2, y)
            loss = loss + net.nn_kl_divergence() * complexity_cost_weight
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} | loss {loss.item():.4f}")


if __name__ == "__main__":
    x1, x2, label = make_pairs()
    siamese = BayesianSiameseNet()
    optimizer = torch.optim.Adam(siamese.parameters(), lr=1e-3)
    train(siamese, optimizer, x1, x2, label)
