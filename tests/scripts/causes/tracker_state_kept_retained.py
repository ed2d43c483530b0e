"""An online tracker keeps its recurrent state on the module between frames. The loop passes retain_graph=True to
get past the first error, steps after every frame, and the next backward reaches the previous frame's graph, whose
saved weights the step wrote."""

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
        self.h = self.cell(frame, self.h)
        return self.box(self.h)


tracker = Tracker()
opt = torch.optim.SGD(tracker.parameters(), lr=0.05)
for frame, target in zip(torch.randn(4, 2, 4), torch.randn(4, 2, 4)):
    err = F.mse_loss(tracker(frame), target)
    opt.zero_grad()
    err.backward(retain_graph=True)
    opt.step()
