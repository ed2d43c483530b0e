"""Learning to reweight noisy examples: a small scorer weights each example's loss, judged by a virtual step.

The virtual copy of the classifier's weights is made once, before training, and each round takes its virtual
step from the last round's copy: the copy keeps that round's graph, and it no longer follows the classifier.
"""

import torch
from torch import nn
from torch.func import functional_call

torch.manual_seed(6)
INNER_LR = 0.1

net = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3))
scorer = nn.Sequential(nn.Linear(1, 8), nn.ReLU(), nn.Linear(8, 1))
opt_net = torch.optim.SGD(net.parameters(), lr=0.05)
opt_scorer = torch.optim.Adam(scorer.parameters(), lr=1e-3)
clean_x, clean_y = torch.randn(24, 6), torch.randint(0, 3, (24,))


def train(rounds):
    virtual = {k: v.detach().clone().requires_grad_() for k, v in net.named_parameters()}
    for r in range(rounds):
        x, y = torch.randn(16, 6), torch.randint(0, 3, (16,))
        per_example = nn.functional.cross_entropy(functional_call(net, virtual, (x,)), y, reduction="none")
        weights = torch.sigmoid(scorer(per_example[:, None])).squeeze(1)
        inner = (weights * per_example).mean()
        grads = torch.autograd.grad(inner, list(virtual.values()), create_graph=True)
        virtual = {k: v - INNER_LR * g for (k, v), g in zip(virtual.items(), grads)}
        outer = nn.functional.cross_entropy(functional_call(net, virtual, (clean_x,)), clean_y)
        opt_scorer.zero_grad()
        outer.backward()
        opt_scorer.step()

        per_example = nn.functional.cross_entropy(net(x), y, reduction="none")
        with torch.no_grad():
            weights = torch.sigmoid(scorer(per_example[:, None])).squeeze(1)
        loss = (weights * per_example).mean()
        opt_net.zero_grad()
        loss.backward()
        opt_net.step()
        print(f"round {r}: outer {outer.item():.4f} loss {loss.item():.4f}")


train(4)
