"""Deep equilibrium classifier: fixed point z* = tanh(W z* + U x), gradient by implicit differentiation.

Report: https://github.com/tristandeleu/pytorch-maml-rl/pull/13 -- "Faster hessian_vector_product":
the KL gradient (taken with ``create_graph=True``) was moved out of the closure that the conjugate
gradient solver calls at every iteration, so the graph is built once and differentiated again at each
CG iteration (``torch.autograd.grad(grad_kl_v, params)``); the maintainer asked why the PR adds
``retain_graph=True`` to that call, and the author explained that ``autograd.grad`` without it frees
the buffers of the forward graph, which the next CG iteration differentiates again ("Trying to
backward through the graph a second time"). The training setting is the writer's: a DEQ whose backward pass solves
u = dL/dz + J^T u by fixed-point iteration, where every iteration is a vector-Jacobian product
``torch.autograd.grad(f0, z0, u)`` against the one application f0 = f(z*, x) built after the solve.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

D_IN, D_HIDDEN, N_CLASSES = 10, 32, 3
FORWARD_ITERS, BACKWARD_ITERS, TOL = 50, 30, 1e-4


def make_dataset(n=512):
    x = torch.randn(n, D_IN)
    teacher = torch.randn(D_IN, N_CLASSES)
    y = (torch.tanh(x @ teacher) + 0.1 * torch.randn(n, N_CLASSES)).argmax(dim=1)
    return x, y


class DEQClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.inject = nn.Linear(D_IN, D_HIDDEN)
        self.W = nn.Linear(D_HIDDEN, D_HIDDEN, bias=False)
        self.head = nn.Linear(D_HIDDEN, N_CLASSES)
        with torch.no_grad():   # start well inside the contractive regime
            self.W.weight.mul_(0.5 / torch.linalg.matrix_norm(self.W.weight, ord=2))

    def f(self, z, u):
        return torch.tanh(self.W(z) + u)

    @torch.no_grad()
    def solve(self, u):
        z = torch.zeros_like(u)
        for _ in range(FORWARD_ITERS):
            z_next = self.f(z, u)
            residual = (z_next - z).norm() / (z_next.norm() + 1e-8)
            z = z_next
            if residual < TOL:
                break
        return z


def implicit_backward(f0, z0, grad_z):
    """Solve u = grad_z + J^T u with J = df/dz at the fixed point, by fixed-point iteration."""
    u = grad_z
    for _ in range(BACKWARD_ITERS):
        jtu = torch.autograd.grad(f0, z0, u)[0]
        u_next = jtu + grad_z
        converged = (u_next - u).norm() / (u_next.norm() + 1e-8) < TOL
        u = u_next
        if converged:
            break
    return u


x_all, y_all = make_dataset()
model = DEQClassifier()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(3):
    permutation = torch.randperm(len(x_all))
    correct = 0
    for start in range(0, len(x_all), 64):
        idx = permutation[start:start + 64]
        x, y = x_all[idx], y_all[idx]

        u_inj = model.inject(x)
        z_star = model.solve(u_inj)                    # forward solve, no graph
        z0 = z_star.clone().requires_grad_()
        f0 = model.f(z0, u_inj)                        # one application at the fixed point, with graph

        h = f0.detach().requires_grad_()
        logits = model.head(h)
        loss = F.cross_entropy(logits, y)

        optimizer.zero_grad()
        loss.backward()                                # head parameters, and dL/dz in h.grad
        u = implicit_backward(f0, z0, h.grad)
        f0.backward(u)                                 # implicit gradient into W and inject
        optimizer.step()

        correct += (logits.argmax(dim=1) == y).sum().item()
    print(f"epoch {epoch}: loss {loss.item():.4f}  train acc {correct / len(x_all):.3f}")
