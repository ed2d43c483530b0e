"""The states of the samples whose episode starts are replaced, not written in place."""

import torch
from torch import nn


class Stack(nn.Module):
    def __init__(self, d=6, hidden=10):
        super().__init__()
        self.cells = nn.ModuleList([nn.GRUCell(d, hidden), nn.GRUCell(hidden, hidden)])
        self.head = nn.Linear(hidden, d)

    def forward(self, xs, starts):
        states = [xs.new_zeros(xs.shape[1], 10) for _ in self.cells]
        outs = []
        for t in range(xs.shape[0]):
            new = starts[t]
            if t > 0 and new.any():
                for i in range(len(self.cells)):
                    states[i] = torch.where(new.unsqueeze(1), torch.zeros_like(states[i]), states[i])
            inp = xs[t]
            for i, cell in enumerate(self.cells):
                states[i] = cell(inp, states[i])
                inp = states[i]
            outs.append(self.head(inp))
        return torch.stack(outs)


torch.manual_seed(4)
model = Stack()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for _ in range(3):
    xs = torch.randn(7, 5, 6)
    starts = torch.rand(7, 5) < 0.3
    pred = model(xs, starts)
    loss = (pred[:-1] - xs[1:]).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
