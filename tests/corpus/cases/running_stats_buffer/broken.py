"""A regressor with a hand-written input scaler that keeps a running standard deviation in a buffer."""

import torch
import torch.nn as nn


class RunningScaler(nn.Module):
    def __init__(self, dim, momentum=0.1):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("running_std", torch.ones(dim))

    def forward(self, x):
        out = x / self.running_std
        if self.training:
            with torch.no_grad():
                self.running_std.mul_(1 - self.momentum).add_(self.momentum * x.std(dim=0))
        return out


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 24), nn.ReLU(), nn.Linear(24, 8))
        self.scale = RunningScaler(8)
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.scale(self.body(x)))


torch.manual_seed(25)
reg = Regressor()
optim = torch.optim.SGD(reg.parameters(), lr=0.01, nesterov=True, momentum=0.9)
inputs = torch.randn(80, 5)
outputs = inputs[:, :1] * 3 - inputs[:, 1:2]
for epoch in range(3):
    for i in range(0, 80, 20):
        loss = nn.functional.mse_loss(reg(inputs[i : i + 20]), outputs[i : i + 20])
        optim.zero_grad()
        loss.backward()
        optim.step()
    print(epoch, loss.item())
