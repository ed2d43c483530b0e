"""SN-GAN style discriminator with a hand-written spectral norm: the power iteration lives in a helper that updates
the module's u/v buffers in place through out=. D is called on real and fake before one backward, so the second
call's power step writes into u/v that the first call saved."""

import torch
import torch.nn.functional as F
from torch import nn


def power_iteration(W, u, v):
    with torch.no_grad():
        torch.mv(W.t(), u, out=v)
        F.normalize(v, dim=0, out=v)
        torch.mv(W, v, out=u)
        F.normalize(u, dim=0, out=u)


class SNLinear(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(o, i) * 0.3)
        self.bias = nn.Parameter(torch.zeros(o))
        self.register_buffer("u", F.normalize(torch.randn(o), dim=0))
        self.register_buffer("v", F.normalize(torch.randn(i), dim=0))

    def forward(self, x):
        u, v = self.u, self.v
        power_iteration(self.weight, u, v)
        sigma = torch.dot(u, torch.mv(self.weight, v))
        return F.linear(x, self.weight / sigma, self.bias)


torch.manual_seed(0)
D = nn.Sequential(SNLinear(4, 16), nn.LeakyReLU(0.2), SNLinear(16, 1))
opt = torch.optim.Adam(D.parameters(), lr=1e-3)
for _step in range(5):
    real, fake = torch.randn(8, 4) + 1, torch.randn(8, 4)
    d_loss = F.softplus(-D(real)).mean() + F.softplus(D(fake)).mean()
    opt.zero_grad()
    d_loss.backward()
    opt.step()
print(f"{D[0].weight.sum().item():.6f} {D[0].u.sum().item():.6f}")
