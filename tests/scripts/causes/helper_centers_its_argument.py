"""A two-layer scorer whose hidden activations are centred by a helper that writes into its argument; the
forward calls it for the effect."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(4)


def center(acts):
    """Centre each feature over the batch."""
    acts -= acts.mean(0, keepdim=True)


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 9)
        self.out = nn.Linear(9, 1)

    def forward(self, x):
        h = torch.sigmoid(self.fc(x))
        center(h)
        return self.out(h)


scorer = Scorer()
opt = torch.optim.SGD(scorer.parameters(), lr=0.1)
for _ in range(3):
    x, y = torch.randn(10, 5), torch.randn(10, 1)
    err = F.mse_loss(scorer(x), y)
    opt.zero_grad()
    err.backward()
    opt.step()
