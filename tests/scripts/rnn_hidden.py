"""An RNN whose hidden state is carried across batches without .detach()."""

import torch
from torch import nn

torch.manual_seed(0)
rnn = nn.RNN(3, 4, batch_first=True)
head = nn.Linear(4, 1)
opt = torch.optim.SGD([*rnn.parameters(), *head.parameters()], lr=0.1)
hidden = torch.zeros(1, 2, 4)

for batch in range(2):
    x, y = torch.randn(2, 5, 3), torch.randn(2, 1)
    out, hidden = rnn(x, hidden)
    loss = (head(out[:, -1]) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"batch {batch} done")
