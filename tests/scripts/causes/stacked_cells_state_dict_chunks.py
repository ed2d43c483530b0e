"""Two stacked recurrent cells keep their states in a dict on the model, keyed by depth; advance() reads and stores
them once per time step, and the forward calls it over the chunk. The loop trains chunk by chunk and never detaches
the states, so the second chunk's backward reaches into the first chunk's freed graph."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(71)


class Stack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cells = nn.ModuleList([nn.GRUCell(3, 6), nn.GRUCell(6, 6)])
        self.head = nn.Linear(6, 1)
        self.state = {}

    def begin(self, batch: int) -> None:
        self.state = {depth: torch.zeros(batch, 6) for depth in range(len(self.cells))}

    def advance(self, x: torch.Tensor) -> torch.Tensor:
        for depth, cell in enumerate(self.cells):
            x = cell(x, self.state[depth])
            self.state[depth] = x
        return self.head(x)

    def forward(self, chunk: torch.Tensor) -> torch.Tensor:
        return torch.stack([self.advance(chunk[:, t]) for t in range(chunk.shape[1])], dim=1)


model = Stack()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
series, target = torch.randn(4, 12, 3), torch.randn(4, 12, 1)
model.begin(4)
for start in range(0, 12, 4):
    fit = F.mse_loss(model(series[:, start : start + 4]), target[:, start : start + 4])
    opt.zero_grad()
    fit.backward()
    opt.step()
