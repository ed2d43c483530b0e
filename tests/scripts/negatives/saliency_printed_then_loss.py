"""A negative case of this stop's review: the script a rule was not written for (see tests/test_negatives.py)."""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
opt = torch.optim.SGD(model.parameters(), 0.1)
for _ in range(3):
    x = torch.randn(8, 4, requires_grad=True)
    y = torch.randint(0, 3, (8,))
    out = model(x)
    sal = torch.autograd.grad(out.max(1).values.sum(), x)[0]
    print("saliency", sal.abs().mean().item())
    loss = nn.functional.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
