"""WGAN-GP on 2-D data: the gradient penalty is computed on interpolates built from the undetached fake."""

import torch
import torch.nn as nn
from torch import autograd

torch.manual_seed(2)
G = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 2))
critic = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))
g_optim = torch.optim.Adam(G.parameters(), lr=1e-4, betas=(0.0, 0.9))
c_optim = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.0, 0.9))
LAMBDA = 10.0


def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1)
    interpolates = alpha * real + (1 - alpha) * fake
    interpolates.requires_grad_(True)
    scores = critic(interpolates)
    grads = autograd.grad(outputs=scores, inputs=interpolates, grad_outputs=torch.ones_like(scores), create_graph=True)[
        0
    ]
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


for it in range(6):
    real = torch.randn(64, 2) * 0.5 + torch.tensor([1.0, -1.0])
    noise = torch.randn(64, 2)
    fake = G(noise)

    c_optim.zero_grad()
    gp = gradient_penalty(critic, real, fake)
    critic_loss = critic(fake.detach()).mean() - critic(real).mean() + LAMBDA * gp
    critic_loss.backward()
    c_optim.step()

    g_optim.zero_grad()
    gen_loss = -critic(fake).mean()
    gen_loss.backward()
    g_optim.step()
    if it % 2 == 0:
        print(it, critic_loss.item(), gen_loss.item())
