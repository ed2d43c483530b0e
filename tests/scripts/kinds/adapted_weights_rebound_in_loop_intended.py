"""A few-shot regressor adapted by one inner step per task: corrected: the query forward runs at the adapted weights
with torch.func.functional_call."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(97)

net = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1))
outer = torch.optim.Adam(net.parameters(), lr=1e-3)
for _ in range(3):
    outer.zero_grad()
    xs, ys, xq, yq = torch.randn(10, 3), torch.randn(10, 1), torch.randn(10, 3), torch.randn(10, 1)
    support = F.mse_loss(net(xs), ys)
    grads = torch.autograd.grad(support, list(net.parameters()), create_graph=True)
    adapted = [w - 0.1 * g for w, g in zip(net.parameters(), grads)]
    query = F.mse_loss(
        torch.func.functional_call(net, dict(zip([n for n, _ in net.named_parameters()], adapted)), (xq,)), yq
    )
    meta_grads = torch.autograd.grad(query, adapted)
    for w, g in zip(net.parameters(), meta_grads):
        w.grad = g
    outer.step()
