"""Streaming keyword spotting over consecutive audio chunks: a GRU cell's state and a running energy estimate are kept
on a small memory object between chunks, and cut() is called after each update to stop backpropagation there."""

import torch
import torch.nn as nn

torch.manual_seed(13)


class Memory:
    def __init__(self, batch: int, width: int) -> None:
        self.h = torch.zeros(batch, width)
        self.energy = torch.ones(batch, 1)

    def cut(self):
        self.h = self.h.detach()
        self.energy = self.energy.detach()


cell = nn.GRUCell(6, 16)
readout = nn.Linear(16, 2)
params = [*cell.parameters(), *readout.parameters()]
rms = torch.optim.RMSprop(params, lr=1e-3)
audio = torch.randn(12, 5, 6)
labels = torch.randint(0, 2, (12, 5))
mem = Memory(5, 16)
for chunk in range(0, 12, 4):
    kw_loss = 0.0
    for t in range(chunk, chunk + 4):
        mem.h = cell(audio[t] / mem.energy, mem.h)
        mem.energy = (
            0.9 * mem.energy + 0.1 * audio[t].pow(2).mean(1, keepdim=True) + 0.1 * mem.h.abs().mean(1, keepdim=True)
        )
        kw_loss = kw_loss + nn.functional.cross_entropy(readout(mem.h), labels[t])
    rms.zero_grad()
    kw_loss.backward()
    rms.step()
    mem.cut()
    print(f"{kw_loss.item():.4f}")
