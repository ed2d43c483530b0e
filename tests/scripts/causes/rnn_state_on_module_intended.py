import torch
from torch import nn


class Forecaster(nn.Module):
    """An RNN that remembers its last hidden state between calls."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(3, 6, batch_first=True)
        self.proj = nn.Linear(6, 1)
        self.memory = None

    def forward(self, window):
        seq, self.memory = self.rnn(window, self.memory)
        self.memory = self.memory.detach()
        return self.proj(seq[:, -1])


torch.manual_seed(2)
net = Forecaster()
sgd = torch.optim.SGD(net.parameters(), lr=0.05)
series = torch.randn(5, 2, 4, 3)
for window in series:
    target = window[:, -1, :1]
    mse = ((net(window) - target) ** 2).mean()
    sgd.zero_grad()
    mse.backward()
    sgd.step()
