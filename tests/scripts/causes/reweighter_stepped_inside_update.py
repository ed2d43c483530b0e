"""A classifier and a per-example reweighting network with an optimizer of its own. A trainer object's update()
runs the reweighter's forward, steps it by gradient ascent on the weighted loss and returns that loss; after a
warm-up epoch the loop adds it to the classifier's objective."""

import torch
import torch.nn.functional as F
from torch import nn


class Reweighter:
    def __init__(self, dim: int) -> None:
        self.net = nn.Sequential(nn.Linear(dim, 8), nn.Tanh(), nn.Linear(8, 1), nn.Softplus())
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.05)

    def update(self, feats, per_example):
        w = self.net(feats).squeeze(1)
        weighted = (w * per_example).mean()
        self.opt.zero_grad()
        (-weighted + (w.mean() - 1.0).pow(2)).backward(retain_graph=True)
        self.opt.step()
        return weighted


torch.manual_seed(5)
clf = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3))
clf_opt = torch.optim.Adam(clf.parameters(), lr=1e-2)
rw = Reweighter(6)
batches = [(torch.randn(10, 6), torch.randint(0, 3, (10,))) for _ in range(3)]
for epoch in range(2):
    for xb, yb in batches:
        per = F.cross_entropy(clf(xb), yb, reduction="none")
        weighted = rw.update(xb, per)
        warm = 0.0 if epoch == 0 else 0.5
        objective = per.mean() + warm * weighted
        clf_opt.zero_grad()
        objective.backward()
        clf_opt.step()
