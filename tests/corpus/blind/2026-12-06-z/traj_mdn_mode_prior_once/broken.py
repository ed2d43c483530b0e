"""Pedestrian trajectory prediction: LSTM encoder, social pooling, K-mode bivariate-Gaussian MDN decoder.

Report: https://github.com/pytorch/pytorch/issues/114417 -- "Simple use of torch.distributions
Categorical causes malformed graph when optimizing logits": the author made ``logits`` an
``nn.Parameter``, built ``categorical = Categorical(logits=logits)`` once before the training loop and
minimised ``-categorical.log_prob(data)``; the second ``loss.backward()`` failed with "Trying to
backward through the graph a second time". ``Categorical.__init__`` normalises the logits
(``logits - logits.logsumexp(-1)``, the report prints it with a SubBackward0) with the graph of that
one moment, which the first backward frees; the distribution has to be built from the parameter
inside the loop. The training setting is the
writer's: the mixture weights of the MDN are per-agent evidence plus a learned global prior over the
manoeuvre modes (straight, left, right), kept as a ``Categorical`` built once in ``__init__``.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

torch.manual_seed(0)

T_OBS, T_PRED, K = 8, 12, 3
AGENTS_PER_SCENE, HIDDEN = 4, 32


def make_scenes(num_scenes):
    """Agents walking at constant speed, then going straight or turning left/right after the observed part."""
    n = num_scenes * AGENTS_PER_SCENE
    start = torch.rand(n, 2) * 8.0
    heading = torch.rand(n) * 2 * math.pi
    speed = 0.3 + 0.3 * torch.rand(n)
    turn = torch.tensor([0.0, 0.15, -0.15])[torch.randint(0, 3, (n,))]
    steps = torch.arange(T_OBS + T_PRED, dtype=torch.float)
    angle = heading[:, None] + turn[:, None] * (steps - T_OBS + 1).clamp(min=0)
    vel = speed[:, None, None] * torch.stack([angle.cos(), angle.sin()], dim=-1)
    traj = start[:, None] + vel.cumsum(dim=1) + 0.02 * torch.randn(n, T_OBS + T_PRED, 2)
    traj = traj.view(num_scenes, AGENTS_PER_SCENE, T_OBS + T_PRED, 2)
    return traj[:, :, :T_OBS], traj[:, :, T_OBS:]


class SocialPooling(nn.Module):
    """Max-pool over the other agents of the scene of an MLP on (relative position, their hidden state)."""

    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(2 + HIDDEN, HIDDEN), nn.ReLU())

    def forward(self, last_pos, h):                        # (S, A, 2), (S, A, H)
        rel = last_pos[:, None, :, :] - last_pos[:, :, None, :]            # (S, A, A, 2): j relative to i
        h_j = h[:, None, :, :].expand(-1, AGENTS_PER_SCENE, -1, -1)
        feat = self.mlp(torch.cat([rel, h_j], dim=-1))
        self_mask = torch.eye(AGENTS_PER_SCENE, dtype=torch.bool)[None, :, :, None]
        return feat.masked_fill(self_mask, -1e9).max(dim=2).values


class SocialMDN(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.LSTM(2, HIDDEN, batch_first=True)
        self.pool = SocialPooling()
        self.decoder = nn.Sequential(nn.Linear(2 * HIDDEN, 128), nn.ReLU(), nn.Linear(128, K * T_PRED * 5))
        self.mode_head = nn.Linear(2 * HIDDEN, K)
        self.mode_prior_logits = nn.Parameter(torch.zeros(K))
        self.mode_prior = Categorical(logits=self.mode_prior_logits)

    def forward(self, obs):                                 # (S, A, T_OBS, 2)
        S = obs.shape[0]
        disp = (obs[:, :, 1:] - obs[:, :, :-1]).reshape(S * AGENTS_PER_SCENE, T_OBS - 1, 2)
        _, (h, _) = self.encoder(disp)
        h = h[-1].view(S, AGENTS_PER_SCENE, HIDDEN)
        ctx = torch.cat([h, self.pool(obs[:, :, -1], h)], dim=-1)
        params = self.decoder(ctx).view(S, AGENTS_PER_SCENE, K, T_PRED, 5)
        mu = params[..., :2].cumsum(dim=3)                 # offsets from the last observed position
        sigma = F.softplus(params[..., 2:4]) + 1e-3
        rho = 0.95 * torch.tanh(params[..., 4])
        log_pi = F.log_softmax(self.mode_head(ctx) + self.mode_prior.logits, dim=-1)
        return mu, sigma, rho, log_pi


def bivariate_log_prob(y, mu, sigma, rho):
    dx = (y - mu) / sigma
    z = dx[..., 0] ** 2 + dx[..., 1] ** 2 - 2 * rho * dx[..., 0] * dx[..., 1]
    one_m_rho2 = 1 - rho ** 2
    return -z / (2 * one_m_rho2) - torch.log(2 * math.pi * sigma[..., 0] * sigma[..., 1] * one_m_rho2.sqrt())


def mdn_losses(mu, sigma, rho, log_pi, fut_rel):
    y = fut_rel[:, :, None]                                  # (S, A, 1, T, 2)
    ll_per_mode = bivariate_log_prob(y, mu, sigma, rho).sum(dim=-1)      # (S, A, K)
    nll = -torch.logsumexp(log_pi + ll_per_mode, dim=-1).mean()
    ade_per_mode = (mu - y).norm(dim=-1).mean(dim=-1)        # (S, A, K)
    best_of_k = ade_per_mode.min(dim=-1).values.mean()
    return nll, best_of_k


obs_all, fut_all = make_scenes(64)
model = SocialMDN()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)

for epoch in range(3):
    permutation = torch.randperm(len(obs_all))
    for start in range(0, len(obs_all), 8):
        idx = permutation[start:start + 8]
        obs, fut = obs_all[idx], fut_all[idx]
        fut_rel = fut - obs[:, :, -1:, :]

        mu, sigma, rho, log_pi = model(obs)
        nll, best_of_k = mdn_losses(mu, sigma, rho, log_pi, fut_rel)
        loss = nll + 0.5 * best_of_k

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: nll {nll.item():.3f}  minADE@{K} {best_of_k.item():.3f}")
