"""A recurrent tracker keeps every state in a list, makes the next one from states[-1], and fits each step's
prediction read back by position: the list is a history, and clearing it would break the next states[-1]."""

import torch
import torch.nn as nn

torch.manual_seed(0)

cell = nn.GRUCell(3, 5)
head = nn.Linear(5, 1)
opt = torch.optim.Adam([*cell.parameters(), *head.parameters()], lr=1e-2)
states = [torch.zeros(4, 5)]
for t in range(4):
    states.append(cell(torch.randn(4, 3), states[-1]))
    loss = head(states[t + 1]).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
