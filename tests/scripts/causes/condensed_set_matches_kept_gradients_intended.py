"""Dataset condensation by gradient matching: a few synthetic inputs are learned so that the probe
network's gradient on them points the way its gradient on a real batch does. The real batch's gradient
is computed once, before the loop, with create_graph=True (copied from the per-step version), so it keeps
its graph through the probe's weights; the second step's backward goes into it and finds it freed.
No optimizer holds the probe; the loop differentiates with respect to its weights, so freezing it is no fix.
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(3)
probe = nn.Sequential(nn.Linear(8, 5), nn.Tanh(), nn.Linear(5, 3))
real_x = torch.randn(16, 8)
real_y = torch.randint(0, 3, (16,))
weights = [w for w in probe.parameters()]
real_loss = F.cross_entropy(probe(real_x), real_y)
g_real = torch.autograd.grad(real_loss, weights, create_graph=True)
g_real = tuple(g.detach() for g in g_real)

syn_x = torch.randn(6, 8, requires_grad=True)
syn_y = torch.tensor([0, 0, 1, 1, 2, 2])
opt = torch.optim.SGD([syn_x], lr=0.5)


def mismatch(ga, gb):
    return sum(1 - F.cosine_similarity(a.flatten(), b.flatten(), dim=0) for a, b in zip(ga, gb))


for it in range(5):
    syn_loss = F.cross_entropy(probe(syn_x), syn_y)
    g_syn = torch.autograd.grad(syn_loss, weights, create_graph=True)
    dist = mismatch(g_syn, g_real)
    opt.zero_grad()
    dist.backward()
    opt.step()
print(f"{syn_x.sum().item():.6f}")
