"""Guided evolution strategies mixed with backprop gradients on a quantised regression objective.

Report: https://github.com/pytorch/pytorch/issues/46588
The issue asks to reword the "Trying to backward through the graph a second
time ... Specify retain_graph=True when calling backward the first time" message
so that it says the earlier call may have been ``torch.autograd.grad`` and not
``.backward()``: ``torch.autograd.grad`` frees the graph it differentiates
(``retain_graph`` defaults to False) just as ``.backward()`` does, so a later
``loss.backward()`` on the same loss fails although the code calls backward only
once, and the old message sent users looking for a first ``backward`` that was
not there. The fix for such code is ``retain_graph=True`` on the
``torch.autograd.grad`` call (the message now names it).

The training setting is the writer's: guided ES (Maheswaranathan et al.) for a
regressor judged by a non-differentiable, quantised error. A differentiable
surrogate (the MSE) gives a gradient through ``torch.autograd.grad``; its recent
directions span the subspace in which the antithetic perturbations are drawn.
The parameter update mixes the ES estimate with the surrogate's backprop
gradient, which the loop obtains with ``loss.backward()`` on the surrogate loss
that ``torch.autograd.grad`` has already differentiated.
"""
from collections import deque

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

torch.manual_seed(0)

N, D, BATCH, ITERS = 256, 4, 64, 30
SIGMA, ALPHA, K_SUBSPACE, PAIRS, MIX = 0.05, 0.5, 3, 6, 0.5

x = torch.randn(N, D)
w_true = torch.randn(D)
y = (torch.sin(x @ w_true) + 0.3 * x[:, :1].pow(2).squeeze(1)).unsqueeze(1)

model = nn.Sequential(nn.Linear(D, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1))
names = [n for n, _ in model.named_parameters()]
shapes = [p.shape for p in model.parameters()]
n_params = sum(p.numel() for p in model.parameters())


def flatten(tensors):
    return torch.cat([t.reshape(-1) for t in tensors])


def unflatten(vec):
    out, offset = {}, 0
    for name, shape in zip(names, shapes):
        n = shape.numel()
        out[name] = vec[offset : offset + n].view(shape)
        offset += n
    return out


@torch.no_grad()
def quantised_error(params, xb, yb):
    """The objective we care about: error of predictions rounded to a 0.25 grid."""
    pred = functional_call(model, params, (xb,))
    return (torch.round(pred * 4) / 4 - yb).abs().mean()


def surrogate_direction(xb, yb):
    """Surrogate loss and its gradient, flattened, for the guiding subspace."""
    loss = F.mse_loss(model(xb), yb)
    grads = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
    return loss, flatten(grads)


class GuidedES:
    def __init__(self, n, k, sigma, alpha, pairs):
        self.n, self.k, self.sigma, self.alpha, self.pairs = n, k, sigma, alpha, pairs
        self.history = deque(maxlen=k)

    def add_direction(self, g):
        self.history.append(g / (g.norm() + 1e-8))

    def sample(self):
        eps = (self.alpha / self.n) ** 0.5 * torch.randn(self.n)
        if self.history:
            basis, _ = torch.linalg.qr(torch.stack(list(self.history), 1))
            eps = eps + ((1 - self.alpha) / basis.shape[1]) ** 0.5 * basis @ torch.randn(basis.shape[1])
        return self.sigma * eps

    @torch.no_grad()
    def estimate(self, xb, yb):
        theta = flatten([p.detach() for p in model.parameters()])
        g = torch.zeros(self.n)
        for _ in range(self.pairs):
            eps = self.sample()
            f_plus = quantised_error(unflatten(theta + eps), xb, yb)
            f_minus = quantised_error(unflatten(theta - eps), xb, yb)
            g += (f_plus - f_minus) * eps
        return g / (2 * self.sigma**2 * self.pairs)


def mix_gradients(g_es, mix):
    """p.grad <- mix * backprop gradient + (1 - mix) * ES estimate."""
    offset = 0
    for p in model.parameters():
        n = p.numel()
        p.grad.mul_(mix).add_(g_es[offset : offset + n].view_as(p), alpha=1 - mix)
        offset += n


es = GuidedES(n_params, K_SUBSPACE, SIGMA, ALPHA, PAIRS)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

for it in range(ITERS):
    idx = torch.randint(0, N, (BATCH,))
    xb, yb = x[idx], y[idx]
    loss, g_surrogate = surrogate_direction(xb, yb)
    es.add_direction(g_surrogate)
    g_es = es.estimate(xb, yb)

    optimizer.zero_grad()
    loss.backward()
    mix_gradients(g_es, MIX)
    optimizer.step()

    if it % 10 == 9:
        with torch.no_grad():
            full = quantised_error(dict(model.named_parameters()), x, y)
        print(f"iter {it + 1}: surrogate {loss.item():.4f}  quantised error {full.item():.4f}")
