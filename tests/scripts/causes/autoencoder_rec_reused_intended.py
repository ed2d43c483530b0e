import torch
from torch import nn


def epoch(enc, dec, opt_enc, opt_dec, data):
    for x in data:
        code = enc(x)
        out = dec(code)
        rec = (out - x).pow(2).mean()
        sparsity = code.abs().mean()
        opt_dec.zero_grad()
        rec.backward(retain_graph=True)
        opt_dec.step()
        out = dec(code)
        rec = (out - x).pow(2).mean()
        full = rec + 0.01 * sparsity
        opt_enc.zero_grad()
        full.backward()
        opt_enc.step()


torch.manual_seed(12)
enc = nn.Sequential(nn.Linear(9, 5), nn.ReLU())
dec = nn.Sequential(nn.Linear(5, 9), nn.Sigmoid())
opt_enc = torch.optim.Adam(enc.parameters(), lr=1e-3)
opt_dec = torch.optim.SGD(dec.parameters(), lr=0.1)
epoch(enc, dec, opt_enc, opt_dec, torch.rand(3, 6, 9))
