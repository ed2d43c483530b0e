"""A probe fitted to features a client shipped: the features were computed with autograd on, so they
carry the client's graph; the probe's loop backwards through them at every step."""

import torch
from torch import nn

torch.manual_seed(1)


class Client:
    def __init__(self):
        self.body = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4))
        self.opt = torch.optim.SGD(self.body.parameters(), lr=0.1)

    def local_round(self, xs, ys):
        self.opt.zero_grad()
        err = ((self.body(xs).sum(dim=1) - ys) ** 2).mean()
        err.backward()
        self.opt.step()

    def ship(self, xs):
        feats = self.body(xs)
        return feats * 0.5, feats.tanh()


def fit_probe(shipped, steps=4):
    probe = nn.Linear(4, 4)
    popt = torch.optim.Adam(probe.parameters(), lr=0.05)
    shipped = tuple(t.detach() for t in shipped)
    for k in range(steps):
        popt.zero_grad()
        mismatch = sum(((probe(a) - b) ** 2).mean() for a, b in [shipped])
        mismatch.backward()
        popt.step()
    return probe


client = Client()
data, labels = torch.randn(16, 6), torch.randn(16)
for rnd in range(2):
    client.local_round(data, labels)
    shipped = client.ship(data)
    fitted = fit_probe(shipped)
    print(rnd, float(fitted.weight.sum()))
