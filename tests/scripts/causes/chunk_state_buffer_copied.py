"""A recurrent model run over a long sequence in chunks, one backward for the whole sequence: the state between
chunks lives in a registered buffer, written with copy_ at the end of each chunk and zeroed in place at the start
of each sequence. The next chunk saved the buffer; the copy_ rewrites it."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Chunked(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(3, 5)
        self.head = nn.Linear(5, 1)
        self.register_buffer("carry", torch.zeros(4, 5))

    def start(self):
        self.carry.zero_()

    def forward(self, chunk):
        h = self.carry
        outs = []
        for t in range(chunk.shape[1]):
            h = self.cell(chunk[:, t], h)
            outs.append(self.head(h))
        self.carry.copy_(h)
        return torch.cat(outs, dim=1)


model = Chunked()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
series, target = torch.randn(4, 12, 3), torch.randn(4, 12)
for epoch in range(3):
    model.start()
    total = 0.0
    for s in range(0, 12, 4):
        total = total + F.mse_loss(model(series[:, s : s + 4]), target[:, s : s + 4])
    opt.zero_grad()
    total.backward()
    opt.step()
    print(epoch, round(total.item(), 4))
