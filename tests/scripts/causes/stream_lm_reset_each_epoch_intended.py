"""A character model keeps its LSTM state on the module; the training function resets it at the start of each
epoch and then trains window by window over one long stream: corrected, the state is
stored detached (truncated backpropagation through time)."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(113)


class CharModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(12, 8)
        self.rnn = nn.LSTM(8, 16)
        self.out = nn.Linear(16, 12)
        self.state = None

    def reset(self) -> None:
        self.state = None

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        h, new = self.rnn(self.embed(chars), self.state)
        self.state = tuple(t.detach() for t in new)
        return self.out(h)


def train(model: CharModel, opt: torch.optim.Optimizer, stream: torch.Tensor) -> None:
    for _epoch in range(2):
        model.reset()
        for start in range(0, stream.shape[0] - 6, 5):
            logits = model(stream[start : start + 5])
            nll = F.cross_entropy(logits.reshape(-1, 12), stream[start + 1 : start + 6].reshape(-1))
            opt.zero_grad()
            nll.backward()
            opt.step()


model = CharModel()
train(model, torch.optim.Adam(model.parameters(), lr=1e-2), torch.randint(0, 12, (26, 3)))
