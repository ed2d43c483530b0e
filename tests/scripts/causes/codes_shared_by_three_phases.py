"""Three phases per batch on the codes of one encoder pass: the autoencoder's step, then the classifier's step
(which trains the encoder too), then a linear probe of the codes with an optimizer of its own."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(14)
enc = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
dec = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
cls_head = nn.Linear(4, 3)
probe = nn.Linear(4, 3)
opt_ae = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-3)
opt_cls = torch.optim.Adam([*enc.parameters(), *cls_head.parameters()], lr=1e-3)
opt_probe = torch.optim.SGD(probe.parameters(), lr=0.1)
for it in range(3):
    x, y = torch.randn(10, 8), torch.randint(0, 3, (10,))
    codes = enc(x)
    rec = F.mse_loss(dec(codes), x)
    opt_ae.zero_grad()
    rec.backward(retain_graph=True)
    opt_ae.step()
    ce = F.cross_entropy(cls_head(codes), y)
    opt_cls.zero_grad()
    ce.backward(retain_graph=True)
    opt_cls.step()
    probe_loss = F.cross_entropy(probe(codes), y)
    opt_probe.zero_grad()
    probe_loss.backward()
    opt_probe.step()
