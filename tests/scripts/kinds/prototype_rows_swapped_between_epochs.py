"""A prototype classifier trains for an epoch; then a helper moves one class's prototype toward another's by writing
rows of the weight in place (an edit, not a step of any forward), and training goes on. The rows are views of a
parameter, written with a value read from a parameter: torch refuses the write."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(61)


class Prototypes(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(6, 4)
        self.protos = nn.Linear(4, 3, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.protos(torch.tanh(self.embed(x)))


def blend(model: Prototypes, src: int, dst: int, rate: float) -> None:
    toward = model.protos.weight[src] - model.protos.weight[dst]
    model.protos.weight[dst] += rate * toward


model = Prototypes()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(2):
    for _ in range(2):
        x, y = torch.randn(10, 6), torch.randint(0, 3, (10,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch == 0:
        blend(model, 0, 2, 0.3)
