"""A character model trained by a Trainer whose `update()` runs the forward and the backward and hands the LSTM's
(h, c) state back; the loop over chunks of one long sequence passes that state into the next call."""

import torch
from torch import nn


class CharModel(nn.Module):
    def __init__(self, vocab=12, width=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.lstm = nn.LSTM(width, width, batch_first=True)
        self.out = nn.Linear(width, vocab)

    def forward(self, tokens, state):
        seq, state = self.lstm(self.embed(tokens), state)
        return self.out(seq), state


class Trainer:
    def __init__(self, model):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.5)
        self.criterion = nn.CrossEntropyLoss()

    def update(self, tokens, targets, state):
        self.opt.zero_grad()
        logits, state = self.model(tokens, state)
        nll = self.criterion(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        nll.backward()
        self.opt.step()
        return nll.item(), state


def run(trainer, stream, chunk=6):
    state = (torch.zeros(1, 2, 16), torch.zeros(1, 2, 16))
    for start in range(0, stream.shape[1] - chunk - 1, chunk):
        tokens = stream[:, start : start + chunk]
        targets = stream[:, start + 1 : start + chunk + 1]
        value, state = trainer.update(tokens, targets, state)
        state = tuple(s.detach() for s in state)
        print(f"chunk {start // chunk}: {value:.4f}")


torch.manual_seed(5)
charmodel = CharModel()
run(Trainer(charmodel), torch.randint(0, 12, (2, 40)))
