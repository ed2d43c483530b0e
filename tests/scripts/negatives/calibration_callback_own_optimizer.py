"""A trainer backwards and steps the forecaster's optimizer; a calibration callback then backwards the same loss
for an optimizer of its own (per-site offsets). Its step must stay: that optimizer never stepped."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

net, offsets = nn.Linear(3, 1), nn.Embedding(4, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)


class Calibrate:
    def __init__(self, optimizer):
        self.optimizer = optimizer

    def after(self, loss):
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


calib = Calibrate(torch.optim.SGD(offsets.parameters(), lr=0.1))
for _ in range(2):
    x, site, y = torch.randn(8, 3), torch.randint(0, 4, (8,)), torch.randn(8)
    loss = F.mse_loss(net(x).squeeze(-1) + offsets(site).squeeze(-1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    calib.after(loss)
