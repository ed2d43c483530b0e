"""A two-stage pipeline trained by hand: the head learns on the body's features and hands their gradient back.

The head is given the body's features themselves, so its backward runs on into the body's graph and frees it;
the body's own backward of the handed gradient then finds the graph gone.
"""

import torch
from torch import nn

torch.manual_seed(12)

body = nn.Sequential(nn.Linear(10, 20), nn.GELU(), nn.Linear(20, 8))
head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
opt_body = torch.optim.SGD(body.parameters(), lr=0.05)
opt_head = torch.optim.SGD(head.parameters(), lr=0.05)


def head_step(features, targets):
    features.retain_grad()
    loss = nn.functional.cross_entropy(head(features), targets)
    opt_head.zero_grad()
    loss.backward()
    opt_head.step()
    return features.grad


def body_step(features, grad):
    opt_body.zero_grad()
    features.backward(grad)
    opt_body.step()


batches = [(torch.randn(12, 10), torch.randint(0, 2, (12,))) for _ in range(3)]
for epoch in range(2):
    for x, y in batches:
        h = body(x)
        g = head_step(h, y)
        body_step(h, g)
    print(f"epoch {epoch} done")
