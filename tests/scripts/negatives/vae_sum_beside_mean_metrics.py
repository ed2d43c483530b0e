"""The PyTorch-examples VAE (summed BCE and summed KL per batch), with a validation helper that reports MSE and L1
with torch's default losses. The KL term was written per element and never summed."""

import torch
import torch.nn.functional as F
from torch import nn


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(20, 8)
        self.mu, self.logvar = nn.Linear(8, 2), nn.Linear(8, 2)
        self.dec = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 20), nn.Sigmoid())

    def forward(self, x):
        h = F.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        return self.dec(z), mu, logvar


l1 = nn.L1Loss()


def validate(model, x):
    with torch.no_grad():
        recon, _, _ = model(x)
        return F.mse_loss(recon, x).item(), l1(recon, x).item()


torch.manual_seed(0)
model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
data = torch.rand(64, 20)
for _step in range(3):
    recon, mu, logvar = model(data)
    bce = F.binary_cross_entropy(recon, data, reduction="sum")
    kld = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp())
    loss = bce + kld
    opt.zero_grad()
    loss.backward()
    opt.step()
print(validate(model, data))
