"""A stateful sequence model: its encoder keeps the LSTM's (h, c) on itself from one chunk of a long series to
the next and across epochs; each epoch sums the chunks' losses and backwards once."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(21)


class StatefulEncoder(nn.Module):
    def __init__(self, n_in=3, n_hidden=6):
        super().__init__()
        self.lstm = nn.LSTM(n_in, n_hidden, batch_first=True)
        self.h = None
        self.c = None

    def forward(self, chunk):
        if self.h is None:
            self.h = torch.zeros(1, chunk.shape[0], self.lstm.hidden_size)
            self.c = torch.zeros(1, chunk.shape[0], self.lstm.hidden_size)
        out, (self.h, self.c) = self.lstm(chunk, (self.h, self.c))
        return out


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = StatefulEncoder()
        self.readout = nn.Linear(6, 1)

    def forward(self, chunk):
        return self.readout(self.encoder(chunk)).squeeze(-1)


series = torch.randn(2, 40, 3)
targets = series[..., 0].roll(-1, dims=1)
forecaster = Forecaster()
opt = torch.optim.RMSprop(forecaster.parameters(), lr=1e-3)
for epoch in range(3):
    total = 0.0
    for start in range(0, 40, 10):
        pred = forecaster(series[:, start : start + 10])
        total = total + F.mse_loss(pred, targets[:, start : start + 10])
    opt.zero_grad()
    total.backward()
    opt.step()
