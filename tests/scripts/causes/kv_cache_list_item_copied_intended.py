"""A decoder with a per-layer memory kept in a list on a cache object: each layer reads its slot at the top of
its forward, mixes it into the attention, and writes the new memory back into the same tensor with copy_()."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
WIDTH, SLOTS, LAYERS = 8, 4, 2


class Memory:
    def __init__(self, batch):
        self.slots = [torch.zeros(batch, SLOTS, WIDTH) for _ in range(LAYERS)]


class MemoryLayer(nn.Module):
    def __init__(self, index):
        super().__init__()
        self.index = index
        self.query = nn.Linear(WIDTH, WIDTH)
        self.write_gate = nn.Linear(WIDTH, WIDTH)

    def forward(self, h, memory):
        mem = memory.slots[self.index].clone()
        attn = torch.softmax(self.query(h) @ mem.transpose(1, 2), dim=-1)
        out = h + attn @ mem
        update = torch.sigmoid(self.write_gate(out)).mean(1, keepdim=True) * mem
        memory.slots[self.index].copy_(update)
        return out


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([MemoryLayer(i) for i in range(LAYERS)])
        self.head = nn.Linear(WIDTH, 1)

    def forward(self, x, memory):
        for layer in self.layers:
            x = layer(x, memory)
        return self.head(x).squeeze(-1)


decoder = Decoder()
opt = torch.optim.SGD(decoder.parameters(), lr=0.1)
for step in range(3):
    memory = Memory(3)
    memory.slots = [s + 0.1 * torch.randn_like(s) for s in memory.slots]
    x, y = torch.randn(3, 5, WIDTH), torch.randn(3, 5)
    loss = F.mse_loss(decoder(x, memory), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
