"""A recurrent cell reads a sensor stream one reading at a time and carries its hidden state on; every fifth reading
the loop backwards the prediction error and steps. Corrected: the state detached after each update."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(67)

cell = nn.RNNCell(2, 8)
readout = nn.Linear(8, 1)
opt = torch.optim.SGD([*cell.parameters(), *readout.parameters()], lr=0.05)
stream = torch.randn(21, 1, 2)
h = torch.zeros(1, 8)
for t in range(20):
    h = cell(stream[t], h)
    if t % 5 == 4:
        err = F.mse_loss(readout(h), stream[t + 1, :, :1])
        opt.zero_grad()
        err.backward()
        opt.step()
        h = h.detach()
