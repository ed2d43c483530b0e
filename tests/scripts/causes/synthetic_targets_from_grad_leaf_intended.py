"""Fitting a regressor to synthetic targets drawn once from a ground-truth weight vector.

The ground-truth weights were made with requires_grad=True (copied from a gradient check) and no optimizer
holds them; the targets drawn from them, with noise, keep their graph, and the second epoch's backward
runs into it after the first freed it.
"""

import torch
from torch import nn

torch.manual_seed(14)

true_w = torch.randn(6, 1, requires_grad=True)
inputs = torch.randn(48, 6)
targets = (inputs @ true_w + 0.1 * torch.randn(48, 1)).detach()  # data: drawn once, no graph

model = nn.Linear(6, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    for i in range(0, 48, 16):
        loss = nn.functional.mse_loss(model(inputs[i : i + 16]), targets[i : i + 16])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch}: {loss.item():.4f}")
