"""A negative case of this stop's review: the script a rule was not written for (see tests/test_negatives.py)."""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), 1e-3)
data = torch.randn(64, 2)
for _ in range(3):
    x = torch.randn(64, 2, requires_grad=True)
    e = model(x).sum()
    for _ in range(5):
        (g,) = torch.autograd.grad(e, x)
        with torch.no_grad():
            x -= 0.1 * g
            x += 0.01 * torch.randn_like(x)
    loss = model(data).mean() - model(x.detach()).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
