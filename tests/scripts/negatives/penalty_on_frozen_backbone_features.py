"""A negative case of this stop's review: the script a rule was not written for (see tests/test_negatives.py)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
        self.head = nn.Linear(8, 3)


class Learner:
    def __init__(self):
        self.model = Net()
        self.opt = torch.optim.SGD(self.model.parameters(), 0.1)

    def step(self, x, y):
        feats = self.model.backbone(x).detach()  # the backbone is pretrained: only the head is trained
        logits = self.model.head(feats)
        loss = F.cross_entropy(logits, y)
        grads = torch.autograd.grad(loss, list(self.model.parameters()), create_graph=True)
        penalty = sum(g.pow(2).sum() for g in grads)
        total = loss + 0.01 * penalty
        self.opt.zero_grad()
        total.backward()
        self.opt.step()


L = Learner()
for _ in range(3):
    L.step(torch.randn(16, 4), torch.randint(0, 3, (16,)))
