"""A box regressor whose predicted corners are clipped to the image by writing each coordinate in place, each write
reading the prediction it overwrites."""

import torch
import torch.nn as nn

torch.manual_seed(0)

regressor = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
sgd = torch.optim.SGD(regressor.parameters(), lr=0.05)
width, height = 1.0, 0.75

for it in range(3):
    crops, targets = torch.randn(12, 10), torch.rand(12, 4)
    boxes = regressor(crops)
    x0 = boxes[:, 2] * torch.sigmoid(boxes[:, 0] / boxes[:, 2].abs().clamp(min=0.1)) * width
    y0 = boxes[:, 3] * torch.sigmoid(boxes[:, 1] / boxes[:, 3].abs().clamp(min=0.1)) * height
    boxes = torch.stack([x0, y0, boxes[:, 2], boxes[:, 3]], dim=1)
    err = nn.functional.smooth_l1_loss(boxes, targets)
    sgd.zero_grad()
    err.backward()
    sgd.step()
