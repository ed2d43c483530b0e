"""A model whose forward returns its output detached (a leftover from feature extraction)."""

import torch
from torch import nn


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.Linear(4, 16)
        self.out = nn.Linear(16, 2)

    def forward(self, x):
        z = torch.sigmoid(self.hidden(x))
        y = self.out(z)
        y = y.detach()
        return y


torch.manual_seed(13)
reg = Regressor()
opt = torch.optim.SGD(reg.parameters(), lr=0.2)
x, t = torch.randn(12, 4), torch.randn(12, 2)
for i in range(3):
    opt.zero_grad()
    loss = ((reg(x) - t) ** 2).mean()
    loss.backward()
    opt.step()
