"""The intended training of embedding_table_spread_in_helper.py: the spread term reads a copy of the table.

Metric learning with an nn.Embedding(max_norm=1.0): a spread term reads the whole table through a helper, then the
lookups of the same forward renormalise the rows they read, in place in the weight the spread term saved."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def spread(table):
    gram = table @ table.t()
    return (gram - torch.diag(torch.diagonal(gram))).pow(2).mean()


items = nn.Embedding(20, 6, max_norm=1.0)
users = nn.Embedding(10, 6)
opt = torch.optim.SGD([*items.parameters(), *users.parameters()], lr=0.1)
for it in range(3):
    u, i = torch.randint(0, 10, (16,)), torch.randint(0, 20, (16,))
    rating = torch.rand(16)
    penalty = spread(items.weight.clone())
    fit = F.mse_loss((users(u) * items(i)).sum(-1), rating)
    loss = fit + 0.1 * penalty
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(it, round(loss.item(), 4))
