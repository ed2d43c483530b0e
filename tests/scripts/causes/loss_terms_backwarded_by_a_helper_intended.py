"""Three task losses of one forward, each handed to a helper that scales it and calls backward on it.

The helper holds no model: only the training loop that calls it knows which network the losses reach.
"""

import torch
from torch import nn

torch.manual_seed(3)

WEIGHTS = {"density": 1.0, "hardness": 0.5, "porosity": 0.25}


class Assay(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.Tanh())
        self.out = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.body(x))


def push_back(term: torch.Tensor, scale: float) -> float:
    (scale * term).backward(retain_graph=True)
    return term.item()


def run(epochs: int = 3) -> None:
    assay = Assay()
    sgd = torch.optim.SGD(assay.parameters(), lr=0.05)
    x, y = torch.randn(32, 6), torch.randn(32, 3)
    for _ in range(epochs):
        sgd.zero_grad()
        pred = assay(x)
        terms = {name: ((pred[:, i] - y[:, i]) ** 2).mean() for i, name in enumerate(WEIGHTS)}
        logged = {}
        for name, term in terms.items():
            logged[name] = push_back(term, WEIGHTS[name])
        sgd.step()


run()
