"""A stacked GRU language model run one chunk at a time: run() hands back the new hidden state of every layer as a
list, and the loop passes that list into the next chunk."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(11)
cells = nn.ModuleList([nn.GRUCell(4, 8), nn.GRUCell(8, 8)])
head = nn.Linear(8, 1)
opt = torch.optim.SGD([*cells.parameters(), *head.parameters()], lr=0.1)


def run(x, states):
    new = []
    inp = x
    for cell, h in zip(cells, states):
        h = cell(inp, h)
        new.append(h)
        inp = h
    return head(inp), new


states = [torch.zeros(5, 8), torch.zeros(5, 8)]
for chunk in range(4):
    x, y = torch.randn(5, 4), torch.randn(5, 1)
    states = [s.detach() for s in states]  # truncated backpropagation through time
    out, states = run(x, states)
    loss = F.mse_loss(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
