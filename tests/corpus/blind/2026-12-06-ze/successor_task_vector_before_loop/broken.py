"""Successor features on a new task: the task's reward vector is composed once, before the training loop.

Source: https://discuss.pytorch.org/t/backpropagation-graph-is-reused-while-it-shouldnt/24554.
The poster computed ``y = t @ a`` from two tensors that require grad once, before a loop, and used
``y`` inside every iteration's loss; the second ``loss.backward()`` raised "Trying to backward
through the graph a second time", because the sub-graph of ``y`` is shared by every iteration and
was freed by the first backward. The answer: recompute the product inside the loop (``retain_graph``
would keep a graph that is stale anyway once ``t`` and ``a`` change). The training setting is the
writer's: transfer with successor features, where a new task's reward vector is a learned mixture of
the reward vectors of base tasks (``w = coeffs @ reward_basis``), the feature network phi and the
successor network psi are trained by reward regression and a TD loss on psi, and Q = psi . w. The
mixture was composed once, before the loop, like ``y``.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

OBS, N_ACT, FEAT, N_BASE, BATCH, GAMMA = 8, 4, 12, 3, 32, 0.9


class FeatureNet(nn.Module):
    """phi(s, a): cumulants whose discounted sum the successor network predicts."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS + N_ACT, 64), nn.ReLU(), nn.Linear(64, FEAT))

    def forward(self, obs, action):
        return self.net(torch.cat([obs, F.one_hot(action, N_ACT).float()], dim=-1))


class SuccessorNet(nn.Module):
    """psi(s, .): one successor-feature vector per action."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS, 64), nn.ReLU(), nn.Linear(64, N_ACT * FEAT))

    def forward(self, obs):
        return self.net(obs).view(-1, N_ACT, FEAT)


def sample_transitions(n):
    obs = torch.randn(n, OBS)
    action = torch.randint(0, N_ACT, (n,))
    next_obs = torch.tanh(torch.einsum("nij,nj->ni", dynamics[action], obs))
    reward = (next_obs * true_reward_dir).sum(-1) + 0.05 * torch.randn(n)
    return obs, action, reward, next_obs


dynamics = torch.randn(N_ACT, OBS, OBS) * 0.4
true_reward_dir = torch.randn(OBS)

phi, psi = FeatureNet(), SuccessorNet()
psi_target = SuccessorNet()
psi_target.load_state_dict(psi.state_dict())
reward_basis = nn.Parameter(torch.randn(N_BASE, FEAT) * 0.1)  # reward vectors of the base tasks
coeffs = nn.Parameter(torch.full((N_BASE,), 1.0 / N_BASE))  # the new task's mixture
optimizer = torch.optim.Adam(list(phi.parameters()) + list(psi.parameters()) + [reward_basis, coeffs], lr=1e-3)

w = coeffs @ reward_basis  # the new task's reward vector

for step in range(60):
    obs, action, reward, next_obs = sample_transitions(BATCH)
    features = phi(obs, action)
    reward_loss = F.mse_loss(features @ w, reward)

    with torch.no_grad():
        next_q = psi_target(next_obs) @ w.detach()
        next_action = next_q.argmax(dim=-1)
        psi_next = psi_target(next_obs)[torch.arange(BATCH), next_action]
        td_target = features.detach() + GAMMA * psi_next
    psi_sa = psi(obs)[torch.arange(BATCH), action]
    sf_loss = F.mse_loss(psi_sa, td_target)

    loss = reward_loss + sf_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 20 == 0:
        psi_target.load_state_dict(psi.state_dict())
        print(f"step {step} reward {reward_loss.item():.4f} sf {sf_loss.item():.4f}")
