"""Running class centres read by the same step's loss after they are moved, in a script that also keeps a numpy
array among its globals."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(17)
SPEAKER_TABLE = np.arange(6.0)  # a numpy array among the frame's names
SPEAKERS, DIM = 3, 4


class CentreTracker:
    def __init__(self, momentum: float = 0.8) -> None:
        self.momentum = momentum
        self.centres = torch.zeros(SPEAKERS, DIM)

    def update(self, emb: torch.Tensor, who: torch.Tensor) -> None:
        means = torch.stack([emb[who == s].mean(0) for s in range(SPEAKERS)])
        self.centres = self.momentum * self.centres + (1 - self.momentum) * means

    def pull(self, emb: torch.Tensor, who: torch.Tensor) -> torch.Tensor:
        return (emb - self.centres[who]).pow(2).sum(1).mean()


encoder = nn.Sequential(nn.Linear(8, 6), nn.Tanh(), nn.Linear(6, DIM))
head = nn.Linear(DIM, SPEAKERS)
opt = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.05)
tracker = CentreTracker()
who = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2])
for _ in range(3):
    emb = encoder(torch.randn(9, 8))
    tracker.update(emb, who)
    objective = F.cross_entropy(head(emb), who) + 0.1 * tracker.pull(emb, who)
    opt.zero_grad()
    objective.backward()
    opt.step()
print(round(objective.item(), 5))
