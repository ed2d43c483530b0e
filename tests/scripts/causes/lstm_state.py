"""Truncated BPTT with an LSTM whose (h, c) state starts as None and is carried across chunks."""

import torch
from torch import nn

torch.manual_seed(0)
lstm, head = nn.LSTM(3, 5, batch_first=True), nn.Linear(5, 1)
opt = torch.optim.SGD([*lstm.parameters(), *head.parameters()], lr=0.1)
chunks = [(torch.randn(2, 4, 3), torch.randn(2, 1)) for _ in range(3)]

state = None
for x, y in chunks:
    out, state = lstm(x, state)
    loss = (head(out[:, -1]) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
