"""Few-shot applicant screening per job family with ANIL; inner loop run without retaining its graph.

Source: PyTorch forum thread "Calculating meta-gradients with approximate inner-loop
gradient", https://discuss.pytorch.org/t/calculating-meta-gradients-with-approximate-inner-loop-gradient/141025

The author re-implements a MAML/ANIL-family method (Lazy MAML) and plans to run the inner
loop "using autograd, without retain_graph enabled" to save memory, then backpropagate
the query loss through the inner loop for the meta-gradient; they note themselves that
for their MAML/ANIL/BOIL baseline (learn2learn) retaining the graph "needs to be enabled
to allow for the outer-loop backprop".  Their evident intent is an outer backward that
reaches the meta-parameters through the inner updates, which requires the inner graph.

Corrected here: the inner ``autograd.grad`` retains its graph (``create_graph=True`` alone,
which retains by default), as the author says the baseline needs.

Reduction: ANIL over job families.  A shared applicant encoder (the body) embeds CV
features; only the linear screening head is adapted in the inner loop with
``torch.autograd.grad(..., create_graph=True, retain_graph=False)``.  The adapted head is
a function of the inner-loop graph, whose saved tensors those calls freed, so the first
``meta_loss.backward()`` fails with "Trying to backward through the graph a second time".
Adam meta-optimizer over body and head.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

HPARAMS = {
    "n_families": 20,      # job families: nursing, logistics, finance, ...
    "n_features": 14,      # years of experience, certifications, test scores, ...
    "embed": 16,
    "n_classes": 3,        # reject / interview / fast-track
    "shots": 12,
    "queries": 12,
    "tasks_per_batch": 4,
    "inner_steps": 3,
    "inner_lr": 0.2,
    "meta_lr": 1e-3,
    "meta_iters": 5,
}


def make_job_families(cfg):
    families = []
    for _ in range(cfg["n_families"]):
        proto = torch.randn(cfg["n_classes"], cfg["n_features"])
        n = cfg["shots"] + cfg["queries"]
        labels = torch.randint(0, cfg["n_classes"], (n,))
        x = proto[labels] + 0.8 * torch.randn(n, cfg["n_features"])
        families.append(((x[:cfg["shots"]], labels[:cfg["shots"]]),
                         (x[cfg["shots"]:], labels[cfg["shots"]:])))
    return families


class ApplicantEncoder(nn.Module):
    def __init__(self, d, embed):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Linear(32, embed), nn.ReLU())

    def forward(self, x):
        return self.net(x)


class ScreeningHead(nn.Module):
    def __init__(self, embed, n_classes):
        super().__init__()
        self.weight = nn.Parameter(0.1 * torch.randn(n_classes, embed))
        self.bias = nn.Parameter(torch.zeros(n_classes))


def head_logits(feats, weight, bias):
    return F.linear(feats, weight, bias)


def inner_adapt(body, head, support, steps, lr):
    xs, ys = support
    feats = body(xs)
    weight, bias = head.weight, head.bias
    for _ in range(steps):
        loss = F.cross_entropy(head_logits(feats, weight, bias), ys)
        # create_graph keeps (retains) the inner graph, so the outer backward can cross it
        gw, gb = torch.autograd.grad(loss, (weight, bias), create_graph=True)
        weight, bias = weight - lr * gw, bias - lr * gb
    return weight, bias


def main():
    cfg = HPARAMS
    families = make_job_families(cfg)
    body = ApplicantEncoder(cfg["n_features"], cfg["embed"])
    head = ScreeningHead(cfg["embed"], cfg["n_classes"])
    meta_opt = torch.optim.Adam(list(body.parameters()) + list(head.parameters()), lr=cfg["meta_lr"])

    for it in range(cfg["meta_iters"]):
        picks = torch.randperm(len(families))[:cfg["tasks_per_batch"]].tolist()
        meta_opt.zero_grad()
        query_losses = []
        for i in picks:
            support, (xq, yq) = families[i]
            weight, bias = inner_adapt(body, head, support, cfg["inner_steps"], cfg["inner_lr"])
            query_losses.append(F.cross_entropy(head_logits(body(xq), weight, bias), yq))
        meta_loss = torch.stack(query_losses).mean()
        meta_loss.backward()
        meta_opt.step()
        print(f"meta-iter {it}: query ce {meta_loss.item():.4f}")


if __name__ == "__main__":
    main()
