"""A training loop that keeps a running mean of the predictions with numpy, for a plot."""

import numpy as np
import torch
from torch import nn

torch.manual_seed(29)
model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(20, 2), torch.randn(20, 1)
means = []
for step in range(3):
    opt.zero_grad()
    pred = model(x)
    loss = nn.functional.smooth_l1_loss(pred, y)
    loss.backward()
    opt.step()
    means.append(float(np.mean(pred.numpy())))
