"""Sudoku cell solver with a distilled set of puzzles whose cell features and soft labels are learned.

Source: https://github.com/ilia10000/dataset-distillation/issues/3
("One of the differentiated Tensors appears to not have been used in the graph"). Distilling with
learned soft labels failed in the hypergradient step; the reporter traced it to differentiating with
respect to a tensor that is not the one the output was computed from (their minimal example:
``torch.autograd.grad((2 * x).sum(), -x)``).

Reduction: a small network picks the digit of an empty sudoku cell from 27 candidate features (which
digits already sit in its row, column and box). Alongside ordinary training on real cells, a
distilled set of 20 synthetic cells with learned soft labels is updated so that one SGD step of the
solver on the distilled cells lowers its loss on real cells. The soft labels are produced by a
helper (a temperature softmax of learned logits) and the hypergradient is asked with respect to a
second call of that helper.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

SETUP = {
    "n_real": 512,
    "n_distilled": 20,
    "batch": 64,
    "iterations": 12,
    "inner_lr": 0.1,
    "distill_lr": 0.05,
    "solver_lr": 0.05,
    "label_temperature": 0.7,
}


def sample_cells(n, gen):
    """Row/column/box presence bits (27) and the digit (0-8) that fits the cell."""
    presence = (torch.rand(n, 3, 9, generator=gen) < 0.45).float()
    digit = torch.randint(0, 9, (n,), generator=gen)
    presence[torch.arange(n), :, digit] = 0.0
    return presence.flatten(1), digit


torch.manual_seed(9)
solver = nn.Sequential(nn.Linear(27, 64), nn.ReLU(), nn.Linear(64, 9))

syn_cells = torch.randn(SETUP["n_distilled"], 27).mul_(0.1).requires_grad_()
syn_label_logits = (3.0 * F.one_hot(torch.arange(SETUP["n_distilled"]) % 9, 9).float()).requires_grad_()


def distilled_targets():
    return F.softmax(syn_label_logits / SETUP["label_temperature"], dim=-1)


def soft_cross_entropy(logits, targets):
    return -(targets * F.log_softmax(logits, dim=-1)).sum(-1).mean()


def one_step_on_distilled(params):
    logits = functional_call(solver, params, (syn_cells,))
    inner_loss = soft_cross_entropy(logits, distilled_targets())
    grads = torch.autograd.grad(inner_loss, list(params.values()), create_graph=True)
    return {name: p - SETUP["inner_lr"] * g for (name, p), g in zip(params.items(), grads)}


def distill_update(real_x, real_y):
    params = dict(solver.named_parameters())
    stepped = one_step_on_distilled(params)
    meta_loss = F.cross_entropy(functional_call(solver, stepped, (real_x,)), real_y)
    g_cells, g_labels = torch.autograd.grad(meta_loss, [syn_cells, distilled_targets()])
    with torch.no_grad():
        syn_cells.sub_(SETUP["distill_lr"] * g_cells)
        syn_label_logits.sub_(SETUP["distill_lr"] * g_labels)
    return meta_loss.item()


def main():
    torch.manual_seed(9)
    gen = torch.Generator().manual_seed(9)
    real_x, real_y = sample_cells(SETUP["n_real"], gen)
    solver_opt = torch.optim.SGD(solver.parameters(), lr=SETUP["solver_lr"], momentum=0.9)

    for it in range(SETUP["iterations"]):
        idx = torch.randint(0, SETUP["n_real"], (SETUP["batch"],), generator=gen)
        meta = distill_update(real_x[idx], real_y[idx])

        solver_loss = F.cross_entropy(solver(real_x[idx]), real_y[idx])
        solver_opt.zero_grad()
        solver_loss.backward()
        solver_opt.step()
        if it % 4 == 0:
            print(f"iter {it}: solver loss {solver_loss.item():.3f}, distilled meta loss {meta:.3f}")

    with torch.no_grad():
        acc = (solver(real_x).argmax(1) == real_y).float().mean().item()
    print(f"cell accuracy {acc:.2%}; distilled label entropy "
          f"{-(distilled_targets() * distilled_targets().log()).sum(-1).mean().item():.3f}")


if __name__ == "__main__":
    main()
