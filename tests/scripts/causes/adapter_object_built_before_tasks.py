"""Few-shot regression of sine waves: a small network written as a function of its weights, and an adapter object
that takes two gradient steps on each task's support points before the query loss trains the network's
initial weights."""

import math

import torch
from torch import nn

torch.manual_seed(2)


def predict(weights: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x @ weights["w1"] + weights["b1"]) @ weights["w2"]


class FastAdapter:
    def __init__(self, named, alpha: float) -> None:
        self.weights = dict(named)
        self.alpha = alpha

    def adapt(self, loss: torch.Tensor) -> None:
        grads = torch.autograd.grad(loss, list(self.weights.values()), create_graph=True)
        for (key, w), g in zip(list(self.weights.items()), grads):
            self.weights[key] = w - self.alpha * g


def task(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    phase = torch.rand(1) * math.pi
    x = torch.rand(n, 1) * 6 - 3
    return x, torch.sin(x + phase)


init = nn.ParameterDict(
    {
        "w1": nn.Parameter(torch.randn(1, 20) * 0.5),
        "b1": nn.Parameter(torch.zeros(20)),
        "w2": nn.Parameter(torch.randn(20, 1) * 0.3),
    }
)
outer = torch.optim.Adam(init.parameters(), lr=1e-3)
adapter = FastAdapter(init.named_parameters(), alpha=0.05)

for episode in range(3):
    xs, ys = task(10)
    xq, yq = task(10)
    for _ in range(2):
        adapter.adapt(((predict(adapter.weights, xs) - ys) ** 2).mean())
    query = ((predict(adapter.weights, xq) - yq) ** 2).mean()
    outer.zero_grad()
    query.backward()
    outer.step()
