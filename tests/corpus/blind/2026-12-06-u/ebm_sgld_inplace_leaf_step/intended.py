"""Energy-based model on 2-D data: SGLD negatives from a replay buffer, contrastive divergence.

Report: https://github.com/BaiTheBest/SparseLLM/issues/13
The author ran gradient descent on an auxiliary tensor that is not a parameter (``s_batch``, made a
leaf that requires grad so that its gradient can be taken) and updated it in place:
``s_batch -= s_learning_rate * s_batch.grad``, which fails with "a leaf Variable that requires grad is
being used in an in-place operation". The maintainer's answer: write the update out of place,
``s_batch = s_batch - s_learning_rate * s_batch.grad``.

The report is a pruning solver; the training setting is the writer's: an EBM whose negative samples
are refined by stochastic gradient Langevin dynamics. The chain state is a leaf with requires_grad
(to take dE/dx), and the Langevin step and its noise are written as in-place updates of it.
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)

BUFFER, BATCH, SGLD_STEPS, STEP, NOISE = 256, 64, 20, 0.05, 0.01


class EnergyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(2, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 1)
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)


def two_moons(n):
    t = torch.rand(n) * math.pi
    upper = torch.rand(n) < 0.5
    x = torch.where(upper, torch.cos(t), 1 - torch.cos(t))
    y = torch.where(upper, torch.sin(t), 0.5 - torch.sin(t))
    return torch.stack([x, y], 1) + 0.05 * torch.randn(n, 2)


class ReplayBuffer:
    def __init__(self, size):
        self.samples = torch.rand(size, 2) * 4 - 2

    def sample(self, n, reinit=0.05):
        idx = torch.randint(0, self.samples.shape[0], (n,))
        x = self.samples[idx].clone()
        fresh = torch.rand(n) < reinit
        x[fresh] = torch.rand(int(fresh.sum()), 2) * 4 - 2
        return x, idx

    def push(self, x, idx):
        self.samples[idx] = x


def sgld(energy, x_init):
    x = x_init.clone().requires_grad_(True)
    for _ in range(SGLD_STEPS):
        e = energy(x).sum()
        grad, = torch.autograd.grad(e, x)
        x = x - STEP * grad
        x = x + NOISE * torch.randn_like(x)
    return x.detach()


energy = EnergyNet()
optimizer = torch.optim.Adam(energy.parameters(), lr=1e-3, betas=(0.0, 0.999))
buffer = ReplayBuffer(BUFFER)

for it in range(5):
    x_pos = two_moons(BATCH)
    x_init, idx = buffer.sample(BATCH)
    x_neg = sgld(energy, x_init)
    buffer.push(x_neg, idx)

    e_pos, e_neg = energy(x_pos), energy(x_neg)
    loss = e_pos.mean() - e_neg.mean() + 0.1 * (e_pos.pow(2).mean() + e_neg.pow(2).mean())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"it {it}: cd {loss.item():.4f} E+ {e_pos.mean().item():.3f} E- {e_neg.mean().item():.3f}")
