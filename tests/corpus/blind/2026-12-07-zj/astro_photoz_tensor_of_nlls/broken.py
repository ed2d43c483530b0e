"""Photometric redshift with a mixture density network over ugriz fluxes, importance-weighted for spectroscopic selection.

Reduced from the PyTorch forum thread "Gradient is lost when use torch.tensor([t1, t2])"
(https://discuss.pytorch.org/t/gradient-is-lost-when-use-torch-tensor-t1-t2/23261): the author built a
vector from scalars that carry a graph with ``torch.tensor([cosa, cosb])``, multiplied it by a constant
matrix and called ``backward`` on its sum: "element 0 of tensors does not require grad and does not
have a grad_fn", because ``torch.tensor`` copies values and drops the graph. The training setting is
the writer's: each galaxy's negative log-likelihood under a redshift mixture truncated at z = 0 is
computed by a per-galaxy helper, the values are gathered with ``torch.tensor`` and combined with the
importance weights that correct the spectroscopic training sample towards the photometric one.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

BANDS = 5
K = 4


def synthetic_catalogue(n):
    """Fluxes from a toy SED that reddens with redshift; spectroscopic sample biased to bright galaxies."""
    z = torch.distributions.Gamma(2.0, 4.0).sample((n,))
    mag_r = 20.0 + 2.5 * torch.log10(1 + 8 * z) + 0.5 * torch.randn(n)
    slope = 1.5 * z.unsqueeze(1)
    offsets = torch.linspace(-1, 1, BANDS)
    mags = mag_r.unsqueeze(1) - slope * offsets + 0.05 * torch.randn(n, BANDS)
    fluxes = 10 ** (-0.4 * (mags - 22.5))
    weights = torch.exp(0.6 * (mag_r - 21.0)).clamp(max=20.0)  # faint galaxies are under-represented
    return fluxes, z, weights


class PhotoZMDN(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(2 * BANDS - 1, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
        )
        self.logits = nn.Linear(hidden, K)
        self.mu = nn.Linear(hidden, K)
        self.log_sigma = nn.Linear(hidden, K)

    def forward(self, fluxes):
        mags = 22.5 - 2.5 * torch.log10(fluxes.clamp(min=1e-3))
        colours = mags[:, :-1] - mags[:, 1:]
        h = self.trunk(torch.cat([(mags - 21.0) / 2.0, colours], 1))
        return F.log_softmax(self.logits(h), -1), F.softplus(self.mu(h)), self.log_sigma(h).clamp(-5, 2).exp()


def galaxy_nll(log_pi, mu, sigma, z):
    """-log p(z) under a Gaussian mixture renormalised to z > 0."""
    comp = torch.distributions.Normal(mu, sigma)
    log_norm = torch.log1p(-comp.cdf(torch.zeros_like(mu)).clamp(max=1 - 1e-6))
    return -torch.logsumexp(log_pi + comp.log_prob(z) - log_norm, -1)


fluxes, z_spec, importance = synthetic_catalogue(256)
model = PhotoZMDN()
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)

for epoch in range(2):
    perm = torch.randperm(len(z_spec))
    for start in range(0, len(perm), 64):
        idx = perm[start:start + 64]
        log_pi, mu, sigma = model(fluxes[idx])
        nlls = torch.tensor([galaxy_nll(log_pi[i], mu[i], sigma[i], z_spec[idx][i]) for i in range(len(idx))])
        w = importance[idx]
        weighted_nll = nlls @ w / w.sum()
        optimizer.zero_grad()
        weighted_nll.backward()
        optimizer.step()
    with torch.no_grad():
        log_pi, mu, sigma = model(fluxes)
        z_mode = mu.gather(1, log_pi.argmax(1, keepdim=True)).squeeze(1)
        nmad = 1.48 * ((z_mode - z_spec) / (1 + z_spec)).abs().median()
    print(f"epoch {epoch}: weighted NLL {weighted_nll.item():.3f}, sigma_NMAD {nmad.item():.3f}")
