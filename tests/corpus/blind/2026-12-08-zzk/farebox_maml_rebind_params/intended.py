"""Fare-product recommendation per transit operator with MAML; fast weights "loaded" by rebinding.

Source: PyTorch forum thread "Another way to implement MAML (Model-Agnostic
Meta-Learning)", https://discuss.pytorch.org/t/another-way-to-implement-maml-model-agnostic-meta-learning/164439

The author wanted MAML on a predefined ``nn.Module`` (a ResNet) without rewriting it with
``F.linear``-style functional calls.  They copy the parameters, then before each forward
"load" the copies with ``for meta_param, model_param in zip(param_copy, model.parameters()):
model_param = meta_param`` ("shallow copy here"), run ``model(x)`` and call
``torch.autograd.grad(loss, param_copy)``.  Rebinding the loop variable never touches the
module: the forward still uses the module's own parameters, the copies are not in the
graph, and autograd.grad raises that a differentiated tensor "appears to not have been
used in the graph".  The author's evident intent is a forward of the unmodified
module evaluated at the copied tensors, which ``torch.func.functional_call`` provides.

Corrected here: both forwards are ``torch.func.functional_call(model, copies, x)`` instead
of the rebinding loop.

Reduction: a small MLP recommends a fare product (single, day pass, weekly pass, monthly
pass) from a rider's tap-on history features; each transit operator is a task.  The
inner loop copies the parameters (``clone``, so the meta-gradient can reach them),
"loads" them with the rebinding loop and asks autograd.grad for gradients with respect to
the copies: the first task fails.  Adam meta-optimizer over the model.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(31)

HPARAMS = {
    "n_operators": 18,
    "n_features": 8,    # taps per week, share of peak taps, zones crossed, ...
    "n_products": 4,
    "hidden": 24,
    "shots": 20,
    "queries": 20,
    "tasks_per_batch": 3,
    "inner_lr": 0.3,
    "meta_lr": 2e-3,
    "meta_iters": 5,
}


def make_operators(cfg):
    ops = []
    for _ in range(cfg["n_operators"]):
        w = torch.randn(cfg["n_features"], cfg["n_products"])
        n = cfg["shots"] + cfg["queries"]
        x = torch.randn(n, cfg["n_features"])
        y = (x @ w + 0.5 * torch.randn(n, cfg["n_products"])).argmax(dim=1)
        ops.append(((x[:cfg["shots"]], y[:cfg["shots"]]), (x[cfg["shots"]:], y[cfg["shots"]:])))
    return ops


class FareRecommender(nn.Module):
    def __init__(self, d, hidden, n_products):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, n_products))

    def forward(self, x):
        return self.layers(x)


def meta_task_loss(model, support, query, inner_lr):
    xs, ys = support
    xq, yq = query
    names = [name for name, _ in model.named_parameters()]
    param_copy = [p.clone() for p in model.parameters()]
    # run the unmodified module at the copied tensors
    out = torch.func.functional_call(model, dict(zip(names, param_copy)), (xs,))
    loss = F.cross_entropy(out, ys)
    grad = torch.autograd.grad(loss, param_copy, create_graph=True)
    param_copy = list(map(lambda p: p[1] - inner_lr * p[0], zip(grad, param_copy)))
    return F.cross_entropy(torch.func.functional_call(model, dict(zip(names, param_copy)), (xq,)), yq)


def main():
    cfg = HPARAMS
    operators = make_operators(cfg)
    model = FareRecommender(cfg["n_features"], cfg["hidden"], cfg["n_products"])
    meta_opt = torch.optim.Adam(model.parameters(), lr=cfg["meta_lr"])
    for it in range(cfg["meta_iters"]):
        picks = torch.randperm(len(operators))[:cfg["tasks_per_batch"]].tolist()
        meta_opt.zero_grad()
        meta_loss = sum(meta_task_loss(model, *operators[i], cfg["inner_lr"]) for i in picks) / len(picks)
        meta_loss.backward()
        meta_opt.step()
        print(f"meta-iter {it}: query ce {meta_loss.item():.4f}")


if __name__ == "__main__":
    main()
