"""An adversarial autoencoder for street-tree crowns: the encoder's codes and the decoder's two images are computed
once per step; the critic's loss is backwarded through them and stepped, then the autoencoder's loss reads them."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

enc = nn.Linear(8, 3)
dec = nn.Linear(3, 8)
critic = nn.Sequential(nn.Linear(8, 6), nn.Tanh(), nn.Linear(6, 1))
opt_ae = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-2)
opt_c = torch.optim.Adam(critic.parameters(), lr=1e-2)


def step(x, other):
    code = enc(x)
    mixed = 0.5 * (code + enc(other))
    rebuilt = dec(code)
    blended = dec(mixed)
    c_loss = F.softplus(critic(torch.cat([rebuilt, blended]))).mean() + F.softplus(-critic(x)).mean()
    opt_c.zero_grad()
    c_loss.backward()
    opt_c.step()
    ae_loss = F.mse_loss(rebuilt, x) + 0.1 * F.softplus(-critic(blended)).mean()
    opt_ae.zero_grad()
    ae_loss.backward()
    opt_ae.step()
    return ae_loss.item()


for it in range(3):
    print(it, round(step(torch.randn(12, 8), torch.randn(12, 8)), 4))
