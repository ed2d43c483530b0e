"""A low-rank adapter on a frozen projection: its effective weight is built by refresh(), which the training loop
calls at the start of each epoch, and every batch's forward reads the built weight."""

import torch
import torch.nn as nn

torch.manual_seed(18)


class LowRankAdapter(nn.Module):
    def __init__(self, d_in: int, d_out: int, rank: int = 2) -> None:
        super().__init__()
        self.base = nn.Parameter(torch.randn(d_out, d_in) * 0.3, requires_grad=False)
        self.down = nn.Parameter(torch.randn(rank, d_in) * 0.1)
        self.up = nn.Parameter(torch.zeros(d_out, rank))
        self.refresh()

    def refresh(self) -> None:
        self.weight_eff = self.base + self.up @ self.down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight_eff.T


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.adapter = LowRankAdapter(6, 4)
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        return self.out(torch.tanh(self.adapter(x)))


reg = Regressor()
opt = torch.optim.Adam([p for p in reg.parameters() if p.requires_grad], lr=1e-2)
for epoch in range(2):
    reg.adapter.refresh()
    for batch in range(3):
        x, y = torch.randn(8, 6), torch.randn(8, 1)
        mse = ((reg(x) - y) ** 2).mean()
        opt.zero_grad()
        mse.backward()
        opt.step()
print(round(mse.item(), 5))
