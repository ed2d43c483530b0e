"""An LSTM whose forget-gate bias is set to 1 by writing into a chunk of the bias, in its init helper."""

import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 6, batch_first=True)
        self.out = nn.Linear(6, 3)
        self.init_weights()

    def init_weights(self):
        nn.init.xavier_uniform_(self.out.weight)
        gates = self.lstm.bias_ih_l0.chunk(4)
        gates[1].fill_(1.0)

    def forward(self, x):
        h, _ = self.lstm(x)
        return self.out(h)


torch.manual_seed(19)
tagger = Tagger()
opt = torch.optim.Adam(tagger.parameters(), lr=1e-2)
x, y = torch.randn(5, 7, 4), torch.randint(0, 3, (5, 7))
for _ in range(3):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(tagger(x).reshape(-1, 3), y.reshape(-1))
    loss.backward()
    opt.step()
