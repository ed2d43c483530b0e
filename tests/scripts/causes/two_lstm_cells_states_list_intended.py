"""Two stacked LSTM cells, each with its (h, c); the model returns the new states as a list of tuples, corrected:
each detached after the step."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(79)


class TwoCells(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cells = nn.ModuleList([nn.LSTMCell(4, 8), nn.LSTMCell(8, 8)])
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor, states: list[tuple[torch.Tensor, torch.Tensor]]):
        new = []
        for cell, state in zip(self.cells, states):
            h, c = cell(x, state)
            new.append((h, c))
            x = h
        return self.head(x), new


model = TwoCells()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
states = [(torch.zeros(5, 8), torch.zeros(5, 8)) for _ in range(2)]
for _ in range(3):
    x, y = torch.randn(5, 4), torch.randn(5, 2)
    out, states = model(x, states)
    loss = F.mse_loss(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    states = [tuple(t.detach() for t in s) for s in states]
