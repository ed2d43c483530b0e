"""Weight norm (torch.nn.utils.parametrizations.weight_norm)."""

import torch
from torch.nn.utils.parametrizations import weight_norm

torch.manual_seed(0)
layer = weight_norm(torch.nn.Linear(5, 4))
opt = torch.optim.SGD(layer.parameters(), lr=0.1)
for step in range(3):
    loss = layer(torch.randn(6, 5)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 4), sorted(n for n, _ in layer.named_parameters()))
