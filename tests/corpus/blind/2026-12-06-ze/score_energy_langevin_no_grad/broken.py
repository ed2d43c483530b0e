"""Noise-conditional score model with an energy parameterisation, sampled by annealed Langevin.

Report: https://github.com/deepinv/deepinv/pull/530 -- "ICNN.grad not working inside
torch.no_grad()": the network's ``grad`` method returns the gradient of its scalar potential
with ``torch.autograd.grad``, and called from sampling code wrapped in ``torch.no_grad()`` the
potential has no graph, so autograd fails with "element 0 of tensors does not require grad and
does not have a grad_fn"; the fix decorates the method with ``@torch.enable_grad()``. The
training setting is the writer's: a 2-D score-based model whose score is minus the gradient of
a learned energy E(x, sigma), trained by denoising score matching over geometric noise levels,
with an EMA copy of the network used for annealed Langevin sampling every few steps -- the
sampler is decorated with ``@torch.no_grad()``.
"""
import copy
import math

import torch
import torch.nn as nn

torch.manual_seed(0)

SIGMAS = torch.exp(torch.linspace(math.log(1.0), math.log(0.05), 6))
SAMPLE_EVERY, EMA_DECAY = 2, 0.99


class EnergyNet(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(3, hidden), nn.Softplus(), nn.Linear(hidden, hidden), nn.Softplus(), nn.Linear(hidden, 1)
        )

    def forward(self, x, sigma):
        s = torch.log(sigma).expand(x.shape[0], 1)
        return self.net(torch.cat([x, s], 1)).squeeze(-1) / sigma.squeeze(-1)

    def score(self, x, sigma, create_graph=False):
        x = x.requires_grad_(True)
        energy = self.forward(x, sigma)
        return -torch.autograd.grad(energy.sum(), x, create_graph=create_graph)[0]


def two_moons(n):
    t = torch.rand(n) * math.pi
    upper = torch.stack([torch.cos(t), torch.sin(t)], 1)
    lower = torch.stack([1 - torch.cos(t), 0.5 - torch.sin(t)], 1)
    pick = (torch.rand(n) < 0.5).unsqueeze(1)
    return torch.where(pick, upper, lower) + 0.05 * torch.randn(n, 2)


def dsm_loss(model, x):
    idx = torch.randint(0, len(SIGMAS), (x.shape[0],))
    sigma = SIGMAS[idx].unsqueeze(1)
    noise = torch.randn_like(x)
    x_noisy = x + sigma * noise
    s = model.score(x_noisy, sigma, create_graph=True)
    return 0.5 * ((sigma * s + noise) ** 2).sum(1).mean()


@torch.no_grad()
def annealed_langevin(model, n=256, steps=5, eps=2e-3):
    x = torch.rand(n, 2) * 4 - 2
    for sigma in SIGMAS:
        alpha = eps * (sigma / SIGMAS[-1]) ** 2
        sig = sigma.reshape(1, 1)
        for _ in range(steps):
            x = x + 0.5 * alpha * model.score(x, sig) + torch.sqrt(alpha) * torch.randn_like(x)
    return x


@torch.no_grad()
def ema_update(ema_model, model):
    for p_ema, p in zip(ema_model.parameters(), model.parameters()):
        p_ema.mul_(EMA_DECAY).add_(p, alpha=1 - EMA_DECAY)


score_net = EnergyNet()
ema_net = copy.deepcopy(score_net).requires_grad_(False)
optimizer = torch.optim.Adam(score_net.parameters(), lr=1e-3)

for step in range(1, 41):
    batch = two_moons(128)
    loss = dsm_loss(score_net, batch)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    ema_update(ema_net, score_net)
    if step % SAMPLE_EVERY == 0:
        samples = annealed_langevin(ema_net)
        print(f"step {step} loss {loss.item():.4f} sample mean {samples.mean(0).tolist()}")
