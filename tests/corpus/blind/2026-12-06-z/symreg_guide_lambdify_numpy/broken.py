"""Symbolic regression with a neural guide: a network reads a sampled curve, ranks candidate
expression skeletons and proposes their constants; the proposed constants are scored by evaluating
the skeleton, compiled from SymPy with ``lambdify``, on the data.

Report: https://github.com/sympy/sympy/issues/25136 (in its comments). The author lambdified SymPy
expressions and wanted to pass PyTorch tensors with ``requires_grad=True`` through them to get
gradients; the lambdified function (NumPy namespace by default) raised "Can't call numpy() on Tensor
that requires grad". The answer pointed to a torch-aware translation of the expression
(sympytorch; SymPy itself now has ``lambdify(..., "torch")``).

The training setting is the writer's: the constants come out of the guide's constant head, so they
require grad, and the first ``np.sin`` / ``np.exp`` applied to an expression containing them fails.
"""

import sympy as sp
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

x_sym, c0, c1 = sp.symbols("x c0 c1")
SKELETONS = [
    c0 * sp.sin(c1 * x_sym),
    c0 * sp.exp(-c1 * x_sym**2),
    c0 * x_sym**2 + c1 * x_sym,
    c0 * sp.log(1 + c1 * x_sym**2),
    c0 * sp.cos(c1 * x_sym) + x_sym,
    c0 * sp.tanh(c1 * x_sym),
]
# compiled once; default namespace (NumPy)
COMPILED = [sp.lambdify((x_sym, c0, c1), expr) for expr in SKELETONS]

N_POINTS = 32
X_GRID = torch.linspace(-2.0, 2.0, N_POINTS)
BATCH = 12
STEPS = 8


def sample_tasks(batch):
    """Curves from random skeletons with random positive constants, plus a little noise."""
    ks = torch.randint(0, len(SKELETONS), (batch,))
    consts = 0.5 + 1.5 * torch.rand(batch, 2)
    ys = []
    for k, (a, b) in zip(ks.tolist(), consts.tolist()):
        y = torch.as_tensor(COMPILED[k](X_GRID, a, b), dtype=torch.float32)
        ys.append(y + 0.01 * torch.randn(N_POINTS))
    return torch.stack(ys), ks, consts


class CurveEncoder(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_POINTS, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())

    def forward(self, y):
        scale = y.abs().amax(dim=1, keepdim=True).clamp_min(1e-3)
        return self.net(y / scale)


class ConstantHead(nn.Module):
    """Two positive constants for every skeleton."""

    def __init__(self, hidden=64):
        super().__init__()
        self.fc = nn.Linear(hidden, 2 * len(SKELETONS))

    def forward(self, h):
        return 0.1 + F.softplus(self.fc(h)).view(-1, len(SKELETONS), 2)


def evaluate_skeleton(k, consts):
    return COMPILED[k](X_GRID, consts[0], consts[1])


def fit_error(ks, const_pred, ys):
    """Mean squared error of each task's true skeleton evaluated at the proposed constants."""
    errs = []
    for i, k in enumerate(ks.tolist()):
        pred = evaluate_skeleton(k, const_pred[i, k])
        errs.append(F.mse_loss(pred, ys[i]))
    return torch.stack(errs).mean()


encoder = CurveEncoder()
skel_head = nn.Linear(64, len(SKELETONS))
const_head = ConstantHead()

# the shared encoder learns more slowly than the two heads
enc_opt = torch.optim.Adam(encoder.parameters(), lr=5e-4)
skel_opt = torch.optim.Adam(skel_head.parameters(), lr=2e-3)
const_opt = torch.optim.Adam(const_head.parameters(), lr=5e-3)

for step in range(STEPS):
    ys, ks, true_consts = sample_tasks(BATCH)
    h = encoder(ys)
    logits = skel_head(h)
    const_pred = const_head(h)

    skel_loss = F.cross_entropy(logits, ks)
    fit_loss = fit_error(ks, const_pred, ys)

    for opt in (enc_opt, skel_opt, const_opt):
        opt.zero_grad()
    (skel_loss + 0.5 * fit_loss).backward()
    for opt in (enc_opt, skel_opt, const_opt):
        opt.step()

    acc = (logits.argmax(1) == ks).float().mean().item()
    print(f"step {step}: skeleton CE {skel_loss.item():.3f} (acc {acc:.2f}) fit MSE {fit_loss.item():.4f}")
