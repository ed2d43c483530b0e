"""A GAN whose critic applies weight-normalised layers (the weight computed from its parametrization's
parameters at each forward); the maker's loss adds a feature-matching term against the critic's features of the
real batch, read detached. The critic's scores of the fake batch are computed before its step and reused."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm


class Critic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(weight_norm(nn.Linear(6, 16)), nn.LeakyReLU(0.2), weight_norm(nn.Linear(16, 16)))
        self.out = weight_norm(nn.Linear(16, 1))

    def forward(self, x):
        h = self.body(x)
        return h, self.out(h)


torch.manual_seed(13)
maker = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 6))
critic = Critic()
opt_m = torch.optim.Adam(maker.parameters(), lr=1e-3)
opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3)
for it in range(4):
    real = torch.randn(8, 6) + 1.0
    fake = maker(torch.randn(8, 3))
    feat_real, s_real = critic(real)
    feat_fake, s_fake = critic(fake)
    _, s_fake_d = critic(fake.detach())
    c_loss = F.relu(1 - s_real).mean() + F.relu(1 + s_fake_d).mean()
    opt_c.zero_grad()
    c_loss.backward()
    opt_c.step()
    m_loss = -s_fake.mean() + 0.5 * (feat_fake - feat_real.detach()).abs().mean()
    opt_m.zero_grad()
    m_loss.backward()
    opt_m.step()
