"""A recurrent cell whose hidden-to-hidden weight is kept orthogonal by a parametrization; the training loop is
entered inside parametrize.cached() once, to compute the orthogonal matrix only once per unrolled sequence."""

import torch
from torch import nn
from torch.nn.utils import parametrizations, parametrize

torch.manual_seed(6)


class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 5)
        self.rec = parametrizations.orthogonal(nn.Linear(5, 5, bias=False))
        self.out = nn.Linear(5, 1)

    def forward(self, seq):
        h = torch.zeros(seq.shape[0], 5)
        for t in range(seq.shape[1]):
            h = torch.tanh(self.inp(seq[:, t]) + self.rec(h))
        return self.out(h)


cell = Cell()
opt = torch.optim.Adam(cell.parameters(), lr=1e-2)
seqs, ys = torch.randn(6, 4, 3), torch.randn(6, 1)
with parametrize.cached():
    for epoch in range(3):
        fit = (cell(seqs) - ys).pow(2).mean()
        opt.zero_grad()
        fit.backward()
        opt.step()
        print(epoch, fit.item())
