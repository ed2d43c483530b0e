"""Two stages in one script: an autoencoder is trained, then a linear probe is fitted on the codes its encoder gives
for a labelled set, computed once before the probe's loop; the autoencoder's optimizer stays in scope."""

import torch
from torch import nn

torch.manual_seed(11)

enc = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4))
dec = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 16))
ae_opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-3)

unlabelled = torch.randn(64, 16)
for step in range(5):
    recon = dec(enc(unlabelled))
    rec_loss = ((recon - unlabelled) ** 2).mean()
    ae_opt.zero_grad()
    rec_loss.backward()
    ae_opt.step()

probe = nn.Linear(4, 3)
probe_opt = torch.optim.SGD(probe.parameters(), lr=0.1)
labelled, classes = torch.randn(30, 16), torch.randint(0, 3, (30,))
codes = enc(labelled).detach()
for step in range(4):
    probe_loss = nn.functional.cross_entropy(probe(codes), classes)
    probe_opt.zero_grad()
    probe_loss.backward()
    probe_opt.step()
