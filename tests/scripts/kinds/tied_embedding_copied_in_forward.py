"""A tiny language model ties its output projection to its embedding: the forward copies the embedding matrix into
the projection's weight in place, then runs the projection. torch refuses the copy into a parameter that
requires grad."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(127)


class TiedLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.mix = nn.Linear(6, 6)
        self.proj = nn.Linear(6, 10)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.mix(self.emb(tokens)))
        self.proj.weight.copy_(self.emb.weight)
        return self.proj(h)


lm = TiedLM()
opt = torch.optim.Adam(lm.parameters(), lr=1e-2)
for _ in range(3):
    tokens = torch.randint(0, 10, (4, 5))
    nll = F.cross_entropy(lm(tokens[:, :-1]).reshape(-1, 10), tokens[:, 1:].reshape(-1))
    opt.zero_grad()
    nll.backward()
    opt.step()
