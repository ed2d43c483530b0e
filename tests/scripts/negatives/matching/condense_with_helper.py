"""Dataset condensation by gradient matching, with the gradient helpers in gm_utils.py. The real batch's gradient is
computed once, before the loop, with create_graph=True, so it keeps its graph through the probe's weights and the
second step's backward finds it freed. The loop differentiates with respect to the probe's weights (in the helper),
so the probe must keep requires_grad: the real gradient is what to detach."""

import torch
import torch.nn.functional as F
from gm_utils import mismatch, param_grads
from torch import nn

torch.manual_seed(3)
probe = nn.Sequential(nn.Linear(8, 5), nn.Tanh(), nn.Linear(5, 3))
real_x, real_y = torch.randn(16, 8), torch.randint(0, 3, (16,))
g_real = param_grads(F.cross_entropy(probe(real_x), real_y), probe)
syn_x = torch.randn(6, 8, requires_grad=True)
syn_y = torch.tensor([0, 0, 1, 1, 2, 2])
opt = torch.optim.SGD([syn_x], lr=0.5)
for _it in range(5):
    g_syn = param_grads(F.cross_entropy(probe(syn_x), syn_y), probe)
    dist = mismatch(g_syn, g_real)
    opt.zero_grad()
    dist.backward()
    opt.step()
print(f"{syn_x.sum().item():.6f}")
