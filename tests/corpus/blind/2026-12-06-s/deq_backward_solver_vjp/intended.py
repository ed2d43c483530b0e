"""Deep equilibrium classifier with implicit differentiation through a backward hook.

Report: https://github.com/dynamiqs/dynamiqs/pull/351
In dynamiqs' adjoint solver the backward pass took repeated vector-Jacobian products against the
graph of one forward evaluation, and "the graphs of fy and fa were being freed at every time step":
the first ``autograd.grad`` through a graph frees it, so the next product through the same graph
fails with "Trying to backward through the graph a second time"; the graph has to be kept
(``retain_graph=True``) for as long as the solver reuses it.
The training setting is the writer's: a DEQ layer in the style of the implicit-layers tutorial
(fixed point found under no_grad, one differentiable call of f, a hook on z* that solves
g = J_f^T g + grad by fixed-point iteration, each iteration one ``autograd.grad`` through
``f0 = f(z0, x)``) inside a small classifier. The writer's hook leaves out ``retain_graph=True``.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import autograd

torch.manual_seed(0)

N_IN, HIDDEN, N_CLASSES, BATCH = 10, 32, 3, 32


def fixed_point_iteration(f, z0, max_iter=30, tol=1e-4):
    z = z0
    for _ in range(max_iter):
        z_next = f(z)
        if (z_next - z).norm() / (1e-5 + z_next.norm()) < tol:
            return z_next
        z = z_next
    return z


class TanhCell(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.U = nn.Linear(N_IN, HIDDEN)
        with torch.no_grad():
            self.W.weight.mul_(0.5 / torch.linalg.matrix_norm(self.W.weight, ord=2))

    def forward(self, z, x):
        return torch.tanh(self.W(z) + self.U(x))


class DEQFixedPoint(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        with torch.no_grad():
            z = fixed_point_iteration(lambda z: self.f(z, x), torch.zeros(x.shape[0], HIDDEN))
        z = self.f(z, x)

        z0 = z.clone().detach().requires_grad_()
        f0 = self.f(z0, x)

        def backward_hook(grad):
            return fixed_point_iteration(lambda g: autograd.grad(f0, z0, g, retain_graph=True)[0] + grad, grad)

        if z.requires_grad:
            z.register_hook(backward_hook)
        return z


class DEQClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.deq = DEQFixedPoint(TanhCell())
        self.head = nn.Linear(HIDDEN, N_CLASSES)

    def forward(self, x):
        return self.head(self.deq(x))


centers = 2.0 * torch.randn(N_CLASSES, N_IN)
labels = torch.randint(0, N_CLASSES, (256,))
inputs = centers[labels] + torch.randn(256, N_IN)

model = DEQClassifier()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(2):
    for i in range(0, labels.numel(), BATCH):
        x, y = inputs[i:i + BATCH], labels[i:i + BATCH]
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    acc = (model(inputs).argmax(1) == labels).float().mean().item()
    print(f"epoch {epoch} loss {loss.item():.4f} acc {acc:.2f}")
