"""A mixture-density head for wave heights: the output is split into mixing logits and scales with ``chunk``, and a
helper squashes each part in place, one method call per part."""

import torch
import torch.nn as nn

torch.manual_seed(0)


def constrain(out):
    logits, scale = out.chunk(2, dim=-1)
    logits.tanh_()
    scale.exp_()
    return logits, scale


net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 6))
opt = torch.optim.SGD(net.parameters(), lr=0.05)
for it in range(3):
    x, y = torch.randn(12, 4), torch.rand(12, 1)
    logits, scale = constrain(net(x))
    weights = torch.softmax(logits, dim=-1)
    nll = (weights * (torch.log(scale) + y / scale)).sum(-1).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    print(it, round(nll.item(), 4))
