"""A gate scores each input feature; a hard mask is drawn with numpy from those scores, and the model and the gate
train on the masked inputs."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(3)
draws = np.random.default_rng(3)


class Gate(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.logits = nn.Parameter(torch.zeros(features))

    def forward(self) -> torch.Tensor:
        return torch.sigmoid(self.logits)


model = nn.Sequential(nn.Linear(5, 12), nn.ReLU(), nn.Linear(12, 1))
gate = Gate(5)
opt = torch.optim.SGD([*model.parameters(), *gate.parameters()], lr=0.05)

for _ in range(4):
    x, y = torch.randn(16, 5), torch.randn(16, 1)
    keep = gate()
    odds = keep.detach().numpy()
    mask = torch.from_numpy(draws.binomial(1, odds).astype(np.float32))
    fit = F.mse_loss(model(x * mask), y) + 0.01 * keep.sum()
    opt.zero_grad()
    fit.backward()
    opt.step()
