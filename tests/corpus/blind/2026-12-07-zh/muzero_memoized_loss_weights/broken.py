"""MuZero-style model-based RL: representation, dynamics and prediction networks unrolled K steps
against replay-buffer targets, with the value/reward/policy losses balanced by learned uncertainty
weights that a memoised helper turns into multipliers.

Reduces https://github.com/optiland/optiland/pull/485 (fixing optiland issue #484, "Material n / k
caching causes RuntimeError under torch + grad mode"). There a material's refractive index ``n()`` was
computed from torch tensors and memoised per wavelength; with gradient tracking on, the cached tensor
still pointed at the graph of the first forward pass, so the next ``.backward()`` during optimisation
raised "Trying to backward through the graph a second time". The fix stopped serving the cached value
when it carries a graph. Here the memoised function is ``head_weight(name)`` (``functools.lru_cache``
keyed on the loss-head name, "it only ever sees three names"), returning ``exp(-log_var[name])`` from
learnable log-variances; the MuZero training setting is the writer's.
"""
import functools

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

OBS_DIM, N_ACTIONS, LATENT, K_UNROLL = 8, 4, 32, 3
BUFFER, BATCH, STEPS = 256, 32, 6


class Representation(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM, 64), nn.ReLU(), nn.Linear(64, LATENT))

    def forward(self, obs):
        return scale_hidden(self.net(obs))


class Dynamics(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(LATENT + N_ACTIONS, 64), nn.ReLU(), nn.Linear(64, LATENT))
        self.reward = nn.Linear(LATENT, 1)

    def forward(self, latent, action):
        nxt = scale_hidden(self.net(torch.cat([latent, F.one_hot(action, N_ACTIONS).float()], -1)))
        return nxt, self.reward(nxt).squeeze(-1)


class Prediction(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(LATENT, 64), nn.ReLU())
        self.policy = nn.Linear(64, N_ACTIONS)
        self.value = nn.Linear(64, 1)

    def forward(self, latent):
        h = self.trunk(latent)
        return self.policy(h), self.value(h).squeeze(-1)


def scale_hidden(h):
    # MuZero min-max scales each hidden state to [0, 1]
    lo, hi = h.min(-1, keepdim=True)[0], h.max(-1, keepdim=True)[0]
    return (h - lo) / (hi - lo + 1e-5)


class LossBalancer(nn.Module):
    """Homoscedastic-uncertainty weighting: loss_i * exp(-s_i) + s_i per head."""

    def __init__(self, names):
        super().__init__()
        self.log_var = nn.ParameterDict({n: nn.Parameter(torch.zeros(())) for n in names})

    @functools.lru_cache(maxsize=None)
    def head_weight(self, name):
        return torch.exp(-self.log_var[name])

    def forward(self, losses):
        return sum(self.head_weight(n) * l + self.log_var[n] for n, l in losses.items())


def make_buffer():
    obs = torch.randn(BUFFER, OBS_DIM)
    actions = torch.randint(0, N_ACTIONS, (BUFFER, K_UNROLL))
    rewards = torch.tanh(obs[:, :1] + 0.1 * actions.float())  # (BUFFER, K)
    values = torch.tanh(obs[:, 1:2] - obs[:, 2:3]).expand(-1, K_UNROLL + 1) * 0.9 ** torch.arange(K_UNROLL + 1)
    policies = F.softmax(torch.randn(BUFFER, K_UNROLL + 1, N_ACTIONS), -1)  # MCTS visit distributions
    return obs, actions, rewards, values, policies


representation, dynamics, prediction = Representation(), Dynamics(), Prediction()
balancer = LossBalancer(["value", "reward", "policy"])
params = [*representation.parameters(), *dynamics.parameters(), *prediction.parameters(), *balancer.parameters()]
optimizer = torch.optim.Adam(params, lr=3e-3)
buffer = make_buffer()

for step in range(STEPS):
    idx = torch.randint(0, BUFFER, (BATCH,))
    obs, actions, rewards, values, policies = (t[idx] for t in buffer)
    latent = representation(obs)
    value_loss = reward_loss = policy_loss = 0.0
    for k in range(K_UNROLL + 1):
        policy_logits, value = prediction(latent)
        value_loss = value_loss + F.mse_loss(value, values[:, k])
        policy_loss = policy_loss + -(policies[:, k] * F.log_softmax(policy_logits, -1)).sum(-1).mean()
        if k < K_UNROLL:
            latent, reward = dynamics(latent, actions[:, k])
            latent.register_hook(lambda g: g * 0.5)  # MuZero halves the gradient entering the dynamics
            reward_loss = reward_loss + F.mse_loss(reward, rewards[:, k])
    loss = balancer({"value": value_loss, "reward": reward_loss, "policy": policy_loss}) / (K_UNROLL + 1)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} value {value_loss.item():.4f} reward {reward_loss.item():.4f} policy {policy_loss.item():.4f}")
