"""Elevator dispatch for a lift bank: truncated backpropagation through a long day of hall calls.

Source: https://stackoverflow.com/questions/53912956/truncated-backpropagation-through-time-bptt-in-pytorch
The asker wanted truncated BPTT for a recurrent network over a sequence too long to backpropagate
whole, and asked how to set it up since PyTorch has no parameter for it. The answer: run the
sequence in chunks, call ``backward()`` and ``step()`` per chunk, and carry the hidden state into
the next chunk *detached* (``h = h.detach()``); without the detach the next chunk's backward runs
into the previous chunk's already freed graph.

Reduction: a GRU dispatcher reads a day of per-minute hall-call counts for a bank of four cars and
predicts each car's share of the next minute's calls (a proxy for the dispatch policy), trained
against the assignments of a reference group-control system. The recurrent state and a running
estimate of each car's load live in a ``LiftBankState`` object that the training loop advances
chunk by chunk; the state is handed on from one chunk to the next as it is.
"""
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

N_FLOORS = 10
N_CARS = 4
DAY_MINUTES = 240
CHUNK = 30
HIDDEN = 32


def simulate_day():
    t = torch.arange(DAY_MINUTES).float()
    rush = torch.exp(-((t - 60) / 25) ** 2) + 0.6 * torch.exp(-((t - 180) / 30) ** 2)
    calls = torch.poisson(rush[:, None] * torch.rand(N_FLOORS) * 3 + 0.2)
    assign = torch.softmax(calls @ torch.randn(N_FLOORS, N_CARS) * 0.3, dim=-1)
    return calls, assign


class Dispatcher(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(N_FLOORS + N_CARS, HIDDEN)
        self.gru = nn.GRUCell(HIDDEN, HIDDEN)
        self.share = nn.Linear(HIDDEN, N_CARS)

    def forward(self, calls_t, load, h):
        h = self.gru(torch.tanh(self.inp(torch.cat([calls_t, load], -1))), h)
        return F.log_softmax(self.share(h), -1), h


@dataclass
class LiftBankState:
    h: torch.Tensor
    load: torch.Tensor

    @classmethod
    def empty(cls):
        return cls(torch.zeros(1, HIDDEN), torch.zeros(1, N_CARS))

    def advance(self, model, calls_chunk):
        outs = []
        h, load = self.h, self.load
        for calls_t in calls_chunk:
            log_share, h = model(calls_t[None], load, h)
            load = 0.8 * load + 0.2 * log_share.exp() * calls_t.sum()
            outs.append(log_share)
        self.h, self.load = h, load
        return torch.cat(outs)


def train(dispatcher, calls, assign, epochs=2):
    opt = torch.optim.RMSprop(dispatcher.parameters(), lr=3e-3)
    for epoch in range(epochs):
        state = LiftBankState.empty()
        for start in range(0, DAY_MINUTES, CHUNK):
            log_share = state.advance(dispatcher, calls[start:start + CHUNK])
            wait_loss = F.kl_div(log_share, assign[start:start + CHUNK], reduction="batchmean")
            opt.zero_grad()
            wait_loss.backward()
            opt.step()
        print(f"epoch {epoch}: last chunk KL {wait_loss.item():.4f}")


if __name__ == "__main__":
    calls, assign = simulate_day()
    dispatcher = Dispatcher()
    train(dispatcher, calls, assign)
