"""A VAE-style encoder regularised towards a learned Gaussian prior. The prior's distribution object is built once, in
the constructor, from the prior's parameters (its scale through softplus): the distribution holds that softplus
output, with its graph, and every forward's KL term reads it. The second step's backward finds it freed.
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Normal, kl_divergence


class LearnedPriorEncoder(nn.Module):
    def __init__(self, d_in, d_z):
        super().__init__()
        self.net = nn.Linear(d_in, 2 * d_z)
        self.prior_mu = nn.Parameter(torch.zeros(d_z))
        self.prior_raw_scale = nn.Parameter(torch.zeros(d_z))
        self.prior = Normal(self.prior_mu, F.softplus(self.prior_raw_scale))

    def forward(self, x):
        mu, raw = self.net(x).chunk(2, dim=-1)
        post = Normal(mu, F.softplus(raw) + 1e-4)
        return post.rsample(), kl_divergence(post, self.prior).sum(-1).mean()


torch.manual_seed(12)
enc = LearnedPriorEncoder(6, 3)
dec = nn.Linear(3, 6)
opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-2)
data = torch.randn(32, 6)
for epoch in range(3):
    z, kl = enc(data)
    elbo_loss = F.mse_loss(dec(z), data) + 0.1 * kl
    opt.zero_grad()
    elbo_loss.backward()
    opt.step()
print(f"{enc.prior_mu.sum().item():.6f}")
