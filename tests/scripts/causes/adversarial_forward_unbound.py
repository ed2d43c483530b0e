"""Adversarial training by hand: after the clean backward the first layer is nudged, the model is run again, but the
result is bound to a name nothing reads, and the adversarial loss is scored on the clean pass's output."""

import torch
import torch.nn.functional as F
from torch import nn


def scored(logits, labels):
    return logits, F.cross_entropy(logits, labels)


def robust_round(net, opt, x, labels, eps=0.01):
    out = net(x)
    clean = F.cross_entropy(out, labels)
    opt.zero_grad()
    clean.backward()
    with torch.no_grad():
        net[0].weight.add_(eps * net[0].weight.grad.sign())
    pred = net(x)
    pred, adv = scored(out, labels)
    adv.backward()
    with torch.no_grad():
        net[0].weight.sub_(eps * net[0].weight.grad.sign())
    opt.step()


torch.manual_seed(19)
net = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(3):
    robust_round(net, opt, torch.randn(8, 5), torch.randint(0, 3, (8,)))
