"""A classifier whose per-batch work lives in one function, called by the training loop and, every other batch,
by a quick validation on held-out data."""

import torch
from torch import nn

torch.manual_seed(15)

model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_x, train_y = torch.randn(24, 6), torch.randint(0, 3, (24,))
held_x, held_y = torch.randn(8, 6), torch.randint(0, 3, (8,))


def on_batch(x, y):
    logits = model(x)
    ce = nn.functional.cross_entropy(logits, y)
    return logits, ce


def validate():
    with torch.no_grad():
        logits, ce = on_batch(held_x, held_y)
    return float(ce), float((logits.argmax(1) == held_y).float().mean())


for i in range(0, 24, 6):
    logits, ce = on_batch(train_x[i : i + 6], train_y[i : i + 6])
    opt.zero_grad()
    ce.backward()
    opt.step()
    if i % 12 == 0:
        print("held-out ce and accuracy", validate())
