"""Calibrating a classifier's temperature by hand: the log-temperature is a leaf the loop updates itself, and the
gradient is asked of the temperature as the loss computed it, written again in the call."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

net = nn.Linear(5, 3)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
log_t = torch.zeros(1, requires_grad=True)
for it in range(3):
    x = torch.randn(16, 5)
    y = torch.randint(0, 3, (16,))
    nll = F.cross_entropy(net(x) / log_t.exp(), y)
    (g_t,) = torch.autograd.grad(nll, [log_t.exp()], retain_graph=True)
    with torch.no_grad():
        log_t -= 0.5 * g_t
    opt.zero_grad()
    nll.backward()
    opt.step()
    print(it, round(nll.item(), 4))
