"""An online tracker keeps its recurrent state on the module between frames. Corrected: the state is stored
detached, each frame trains through its own graph."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(107)


class Tracker(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.GRUCell(4, 6)
        self.box = nn.Linear(6, 4)
        self.h = torch.zeros(2, 6)

    def forward(self, frame: torch.Tensor) -> torch.Tensor:
        h = self.cell(frame, self.h)
        self.h = h.detach()
        return self.box(h)


tracker = Tracker()
opt = torch.optim.SGD(tracker.parameters(), lr=0.05)
for frame, target in zip(torch.randn(4, 2, 4), torch.randn(4, 2, 4)):
    err = F.mse_loss(tracker(frame), target)
    opt.zero_grad()
    err.backward()
    opt.step()
