"""Forecaster: an LSTM predicts the next value of noisy sine streams with truncated BPTT; (h, c) carried between chunks."""

import torch
import torch.nn as nn

torch.manual_seed(0)

N_STREAMS, LENGTH, CHUNK, HIDDEN = 8, 61, 10, 24


def make_streams():
    t = torch.arange(LENGTH).float()
    freq = 0.1 + 0.2 * torch.rand(N_STREAMS, 1)
    return (torch.sin(freq * t) + 0.05 * torch.randn(N_STREAMS, LENGTH)).unsqueeze(-1)


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, x, state):
        out, state = self.lstm(x, state)
        return self.head(out), state

    def init_state(self, batch):
        return torch.zeros(1, batch, HIDDEN), torch.zeros(1, batch, HIDDEN)


class Trainer:
    def __init__(self, model, lr=1e-2):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.loss_fn = nn.MSELoss()

    def train_epoch(self, streams):
        state = self.model.init_state(streams.shape[0])
        losses = []
        for start in range(0, LENGTH - 1, CHUNK):
            x = streams[:, start : start + CHUNK]
            y = streams[:, start + 1 : start + CHUNK + 1]
            state = tuple(s.detach() for s in state)
            pred, state = self.model(x, state)
            loss = self.loss_fn(pred, y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            losses.append(loss.item())
        return sum(losses) / len(losses)


if __name__ == "__main__":
    streams = make_streams()
    trainer = Trainer(Forecaster())
    for epoch in range(2):
        print(f"epoch {epoch}: loss {trainer.train_epoch(streams):.4f}")
