"""An embedding with max_norm renormalises its weight in place at each lookup; the weight was read before it."""

import torch
from torch import nn

torch.manual_seed(71)
emb = nn.Embedding(10, 3, max_norm=1.0)
head = nn.Linear(3, 1)
opt = torch.optim.SGD([*emb.parameters(), *head.parameters()], lr=0.1)
ids = torch.tensor([1, 2, 4, 5])
for _ in range(3):
    scores = emb.weight @ head.weight.t()
    out = emb(ids)
    loss = (out @ head.weight.t()).sum() + scores.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
