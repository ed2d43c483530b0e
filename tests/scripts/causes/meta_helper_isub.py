"""Meta-learning with the inner step in a helper: `param -= step * grad` on the adapted copies."""

import torch
from torch import nn


def inner_adapt(params, xs, ys, step=0.05):
    adapted = [q.clone() for q in params]
    loss_in = (torch.tanh(xs @ adapted[0]) @ adapted[1] - ys).abs().mean()
    gs = torch.autograd.grad(loss_in, adapted, create_graph=True)
    for param, grad in zip(adapted, gs):
        param -= step * grad
    return adapted


torch.manual_seed(3)
hidden = nn.Linear(5, 8, bias=False)
readout = nn.Linear(8, 2, bias=False)
outer = torch.optim.Adam([*hidden.parameters(), *readout.parameters()], lr=1e-2)
for episode in range(3):
    xs, ys, xq, yq = torch.randn(6, 5), torch.randn(6, 2), torch.randn(6, 5), torch.randn(6, 2)
    w_in, w_out = inner_adapt([hidden.weight.t(), readout.weight.t()], xs, ys)
    query_loss = (torch.tanh(xq @ w_in) @ w_out - yq).abs().mean()
    outer.zero_grad()
    query_loss.backward()
    outer.step()
