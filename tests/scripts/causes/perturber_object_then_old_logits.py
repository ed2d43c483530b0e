"""Adversarial weight perturbation kept in an object: after the clean loss's backward, perturb() moves the model's
weights along their gradients, and the adversarial loss is then computed from the clean logits."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(15)


class Perturber:
    def __init__(self, params, eps: float = 0.05) -> None:
        self.params = list(params)
        self.eps = eps
        self.saved = []

    @torch.no_grad()
    def perturb(self) -> None:
        self.saved = [p.clone() for p in self.params]
        for p in self.params:
            if p.grad is not None:
                p.add_(self.eps * p.grad.sign())

    @torch.no_grad()
    def restore(self) -> None:
        for p, old in zip(self.params, self.saved):
            p.copy_(old)


def step(net, opt, awp, x, y):
    logits = net(x)
    clean = F.cross_entropy(logits, y)
    opt.zero_grad()
    clean.backward(retain_graph=True)
    awp.perturb()
    adv = F.cross_entropy(logits, y)
    adv.backward()
    awp.restore()
    opt.step()
    return adv.item()


net = nn.Sequential(nn.Linear(7, 12), nn.Tanh(), nn.Linear(12, 3))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
awp = Perturber(net.parameters())
for it in range(3):
    print(round(step(net, opt, awp, torch.randn(9, 7), torch.randint(0, 3, (9,))), 5))
