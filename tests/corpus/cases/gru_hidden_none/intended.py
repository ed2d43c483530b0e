"""Streaming forecaster: a GRU whose hidden state starts as None and is carried between batches."""

import torch
from torch import nn


class Forecaster(nn.Module):
    def __init__(self, n_features=3, hidden=12):
        super().__init__()
        self.gru = nn.GRU(n_features, hidden, num_layers=2, batch_first=True)
        self.fc = nn.Linear(hidden, 1)

    def forward(self, x, h=None):
        out, h = self.gru(x, h)
        return self.fc(out[:, -1]), h


def make_stream(n_batches=10, batch=8, window=5):
    t = torch.arange(n_batches * window, dtype=torch.float32)
    base = torch.stack([torch.sin(t / 4), torch.cos(t / 7), torch.sin(t / 11)], dim=1)
    for b in range(n_batches):
        x = base[b * window : (b + 1) * window].expand(batch, -1, -1) + 0.1 * torch.randn(batch, window, 3)
        y = x[:, -1, :1] * 0.5
        yield x, y


def fit(model, epochs=2):
    optim = torch.optim.Adam(model.parameters(), lr=3e-3)
    mse = nn.MSELoss()
    for epoch in range(epochs):
        h = None
        for x, y in make_stream():
            if h is not None:
                h = h.detach()
            pred, h = model(x, h)
            loss = mse(pred, y)
            optim.zero_grad()
            loss.backward()
            optim.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(5)
    net = Forecaster()
    fit(net)
