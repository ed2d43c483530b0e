"""WGAN-GP written inline in a train() function: the interpolates mix the real batch with the attached fake."""

import torch
from torch import nn


def train(steps=3):
    torch.manual_seed(6)
    gen = nn.Sequential(nn.Linear(4, 16), nn.LeakyReLU(0.1), nn.Linear(16, 3))
    crit = nn.Sequential(nn.Linear(3, 16), nn.Softplus(), nn.Linear(16, 1))
    opt_crit = torch.optim.Adam(crit.parameters(), lr=2e-4, betas=(0.5, 0.9))
    opt_gen = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.9))
    for _ in range(steps):
        real = torch.randn(20, 3) * 0.3 + 1.0
        fake = gen(torch.randn(20, 4))
        opt_crit.zero_grad()
        eps = torch.rand(20, 1)
        mixed = eps * real + (1 - eps) * fake
        mixed.requires_grad_(True)
        (grad_mixed,) = torch.autograd.grad(crit(mixed).sum(), mixed, create_graph=True)
        penalty = ((grad_mixed.norm(dim=1) - 1) ** 2).mean()
        d_loss = crit(fake.detach()).mean() - crit(real).mean() + 10.0 * penalty
        d_loss.backward()
        opt_crit.step()
        opt_gen.zero_grad()
        g_loss = -crit(fake).mean()
        g_loss.backward()
        opt_gen.step()


if __name__ == "__main__":
    train()
