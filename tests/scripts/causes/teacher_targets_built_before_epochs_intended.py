"""A learner object fits its student for several epochs on targets that its scorer network (never trained here)
computes sample by sample before the epochs start; the scores are stacked and standardised once."""

import torch
import torch.nn.functional as F
from torch import nn


class Learner:
    def __init__(self):
        self.scorer = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
        self.student = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
        self.opt = torch.optim.SGD(self.student.parameters(), lr=0.05)

    def fit(self, samples, epochs=3):
        scores = []
        for x in samples:
            scores.append(self.scorer(x).squeeze())
        targets = torch.stack(scores)
        targets = ((targets - targets.mean()) / (targets.std() + 1e-6)).detach()
        for epoch in range(epochs):
            pred = self.student(samples).squeeze(-1)
            err = F.mse_loss(pred, targets)
            self.opt.zero_grad()
            err.backward()
            self.opt.step()
            print(f"epoch {epoch}: {err.item():.4f}")


torch.manual_seed(9)
Learner().fit(torch.randn(12, 5))
