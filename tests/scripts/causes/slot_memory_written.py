"""A retrieval layer with a preallocated slot memory: each forward writes its keys into the memory buffer and
attends over what it reads back."""

import torch
from torch import nn


class SlotRead(nn.Module):
    def __init__(self, n, slots):
        super().__init__()
        self.key = nn.Linear(n, n)
        self.query = nn.Linear(n, n)
        self.register_buffer("slots", torch.zeros(slots, n))

    def forward(self, x):
        k = self.key(x)
        self.slots[: k.shape[0]] = k
        mem = self.slots[: k.shape[0]]
        att = torch.softmax(self.query(x) @ mem.t(), dim=-1)
        return att @ mem


torch.manual_seed(43)
reader = SlotRead(4, 8)
out = nn.Linear(4, 1)
sgd = torch.optim.SGD([*reader.parameters(), *out.parameters()], lr=0.1)
for x, y in zip(torch.randn(3, 6, 4), torch.randn(3, 6, 1)):
    err = (out(reader(x)) - y).pow(2).mean()
    sgd.zero_grad()
    err.backward()
    sgd.step()
