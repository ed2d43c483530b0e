"""A natural-gradient regressor: the update direction solves F d = g by conjugate gradient, with Hessian-vector
products of the KL-like curvature term taken again and again from one graph."""

import torch
import torch.nn as nn

torch.manual_seed(0)

regressor = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
params = list(regressor.parameters())
opt = torch.optim.SGD(regressor.parameters(), lr=0.1)


def flat(tensors):
    return torch.cat([t.reshape(-1) for t in tensors])


def conjugate_gradient(product, b, iters=4):
    x = torch.zeros_like(b)
    r, p = b.clone(), b.clone()
    rr = r @ r
    for _ in range(iters):
        Ap = product(p) + 0.1 * p
        alpha = rr / (p @ Ap)
        x, r = x + alpha * p, r - alpha * Ap
        rr_new = r @ r
        p, rr = r + (rr_new / rr) * p, rr_new
    return x


for batch in range(3):
    xb, yb = torch.randn(16, 3), torch.randn(16, 1)
    out = regressor(xb)
    fit = ((out - yb) ** 2).mean()
    curvature = (out**2).mean()
    grads = torch.autograd.grad(curvature, params, create_graph=True)
    flat_grads = flat(grads)
    rhs = flat(torch.autograd.grad(fit, params, retain_graph=True))

    def hvp(v, g=flat_grads):
        return flat(torch.autograd.grad(g @ v, params))

    direction = conjugate_gradient(hvp, rhs)
    opt.zero_grad()
    fit.backward()
    with torch.no_grad():
        offset = 0
        for p in params:
            n = p.numel()
            p.grad.copy_(direction[offset : offset + n].view_as(p))
            offset += n
    opt.step()
