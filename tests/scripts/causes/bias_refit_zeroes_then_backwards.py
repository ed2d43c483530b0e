"""A regressor and a per-group bias table share one loss. The loop backwards it and steps the regressor's
optimizer; then a helper written to own its backward zeroes the bias optimizer, backwards the same loss again and
steps: the second backward meets the freed graph."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(53)


def refit_bias(loss: torch.Tensor, bias_opt: torch.optim.Optimizer) -> None:
    bias_opt.zero_grad()
    loss.backward()
    bias_opt.step()


net = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))
bias = nn.Embedding(4, 1)
net_opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
bias_opt = torch.optim.SGD(bias.parameters(), lr=0.1)
for _ in range(3):
    x, group, y = torch.randn(16, 5), torch.randint(0, 4, (16,)), torch.randn(16)
    err = F.mse_loss(net(x).squeeze(1) + bias(group).squeeze(1), y)
    net_opt.zero_grad()
    err.backward()
    net_opt.step()
    refit_bias(err, bias_opt)
