"""A learned step size is meta-trained through one inner gradient step. The inner gradient keeps its own graph
(create_graph=True) but passes retain_graph=False to save memory, so the outer backward, which crosses the inner
loss's graph, finds it freed."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(89)

net = nn.Linear(5, 1)
log_lr = nn.Parameter(torch.tensor(-2.0))
meta = torch.optim.Adam([*net.parameters(), log_lr], lr=1e-2)
for _ in range(3):
    xs, ys, xq, yq = torch.randn(8, 5), torch.randn(8, 1), torch.randn(8, 5), torch.randn(8, 1)
    inner = F.mse_loss(net(xs), ys)
    gw, gb = torch.autograd.grad(inner, (net.weight, net.bias), create_graph=True, retain_graph=False)
    w, b = net.weight - log_lr.exp() * gw, net.bias - log_lr.exp() * gb
    outer = F.mse_loss(F.linear(xq, w, b), yq) + 0.1 * inner
    meta.zero_grad()
    outer.backward()
    meta.step()
