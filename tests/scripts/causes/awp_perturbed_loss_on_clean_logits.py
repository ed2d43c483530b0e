"""Adversarial weight perturbation (AWP) for a small tabular classifier: the clean loss's gradient tilts every
weight towards higher loss, the adversarial loss is backwarded there, the weights are restored, then stepped."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(2)


def awp_perturb(net, gamma):
    moved = []
    with torch.no_grad():
        for w in net.parameters():
            if w.grad is None:
                continue
            delta = gamma * w.grad / (w.grad.norm() + 1e-12) * w.norm()
            w.add_(delta)
            moved.append((w, delta))
    return moved


def restore(moved):
    with torch.no_grad():
        for w, delta in moved:
            w.sub_(delta)


net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 3))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
features, labels = torch.randn(64, 8), torch.randint(0, 3, (64,))
for epoch in range(3):
    logits = net(features)
    clean = F.cross_entropy(logits, labels)
    opt.zero_grad()
    clean.backward()
    moved = awp_perturb(net, 0.02)
    opt.zero_grad()
    adv = F.cross_entropy(logits, labels)
    adv.backward()
    restore(moved)
    opt.step()
    print(f"{clean.item():.4f} {adv.item():.4f}")
