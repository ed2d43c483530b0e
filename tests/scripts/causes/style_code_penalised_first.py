"""An autoencoder with a content and a style encoder: the style code's penalty is backwarded on its own
first, then the reconstruction (read from both codes) is backwarded; one optimizer steps after both."""

import torch
from torch import nn

torch.manual_seed(3)

content_net = nn.Sequential(nn.Linear(10, 12), nn.ReLU(), nn.Linear(12, 4))
style_net = nn.Sequential(nn.Linear(10, 12), nn.Sigmoid(), nn.Linear(12, 2))
render = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 10))
everything = [*content_net.parameters(), *style_net.parameters(), *render.parameters()]
opt = torch.optim.Adam(everything, lr=1e-3)

batch = torch.randn(20, 10)
for it in range(3):
    opt.zero_grad()
    c, s = content_net(batch), style_net(batch)
    penalty = 0.1 * s.pow(2).sum(dim=1).mean()
    penalty.backward()
    rebuilt = render(torch.cat([c, s], dim=1))
    rec = (rebuilt - batch).pow(2).mean()
    rec.backward()
    opt.step()
    print(it, float(rec), float(penalty))
