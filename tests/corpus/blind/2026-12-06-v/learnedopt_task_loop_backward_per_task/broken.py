"""Learned optimizer (coordinatewise update rule) meta-trained on a meta-batch of tasks, one backward per task.

Source: https://github.com/learnables/learn2learn/issues/381

The reporter trained a model with learn2learn's ``LearnableOptimizer``: a
learnable transform turns each parameter's gradient into an update, and the
model's parameters are replaced by ``p.detach() + update`` so that the next
loss can be backwarded into the transform (a hypergradient).  Like the
library's meta-learning examples, the training loop calls ``backward()`` once
per task of the meta-batch to accumulate gradients, then steps the optimizer of
the transform and the learnable optimizer itself.  The first iteration works;
"on the second iteration by the end of second task batch" it fails with "Trying to
backward through the graph a second time": from the second iteration on, every
task's loss reaches the same update graph built by the previous
``metaopt.step()``, and the first task's backward frees it.  (The reporter
also wrapped the model in MAML; the failure needs only the learnable update and
the per-task backward.)  This script writes the learnable optimizer out by
hand, with a coordinatewise update rule fed with gradient and momentum, on a
small classifier and a meta-batch of synthetic domains.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

IN_DIM, HIDDEN, N_CLASSES = 8, 32, 3
META_BATCH = 4
TASK_BATCH = 32
ITERATIONS = 25


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(IN_DIM, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, N_CLASSES)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def parameter_slots(model):
    """(module, name) for every parameter, so that a parameter can be replaced by a non-leaf tensor."""
    for module in model.modules():
        for name in list(module._parameters):
            if module._parameters[name] is not None:
                yield module, name


class LearnedOptimizer(nn.Module):
    """Coordinatewise learned update rule: momentum SGD plus a learned correction from (gradient, momentum).

    The update is differentiable: after ``step()`` the model's parameters are
    ``p.detach() + update``, so the next loss backwards into the rule.
    """

    def __init__(self, model, hidden=16, lr=0.05, beta=0.9):
        super().__init__()
        self.info = {"model": model}  # a pointer only: the model's parameters are not ours to train
        self.rule = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        nn.init.zeros_(self.rule[2].weight)  # start as plain momentum SGD; the rule learns a correction
        nn.init.zeros_(self.rule[2].bias)
        n_tensors = sum(1 for _ in parameter_slots(model))
        self.log_scale = nn.Parameter(torch.zeros(n_tensors))
        self.lr = lr
        self.beta = beta
        self.momentum = {}

    def step(self):
        model = self.info["model"]
        for i, (module, name) in enumerate(parameter_slots(model)):
            p = module._parameters[name]
            if p.grad is None:
                continue
            g = p.grad.detach()
            key = (id(module), name)
            m = self.beta * self.momentum.get(key, torch.zeros_like(g)) + g
            self.momentum[key] = m
            features = torch.stack([g, m], dim=-1)
            update = -self.lr * self.log_scale[i].exp() * (m + self.rule(features).squeeze(-1))
            new_p = p.detach() + update
            new_p.retain_grad()
            module._parameters[name] = new_p

    def zero_grad(self, set_to_none=True):
        for p in self.info["model"].parameters():
            p.grad = None
        super().zero_grad(set_to_none=set_to_none)


def make_domains(n_domains, n_per_domain):
    """Each domain: the same 3-class problem seen through its own shift and scale."""
    centers = torch.randn(N_CLASSES, IN_DIM) * 2.0
    domains = []
    for _ in range(n_domains):
        shift = torch.randn(IN_DIM)
        scale = 0.5 + torch.rand(IN_DIM)
        y = torch.randint(0, N_CLASSES, (n_per_domain,))
        x = (centers[y] + torch.randn(n_per_domain, IN_DIM)) * scale + shift
        domains.append((x, y))
    return domains


def sample_task(domain):
    x, y = domain
    idx = torch.randint(0, x.shape[0], (TASK_BATCH,))
    return x[idx], y[idx]


def main():
    domains = make_domains(8, 256)
    model = Classifier()
    learned_opt = LearnedOptimizer(model)
    meta_opt = torch.optim.Adam(learned_opt.parameters(), lr=1e-3)

    for it in range(ITERATIONS):
        meta_opt.zero_grad()
        learned_opt.zero_grad()
        task_ids = torch.randperm(len(domains))[:META_BATCH]
        total = 0.0
        for t in task_ids.tolist():
            x, y = sample_task(domains[t])
            task_error = F.cross_entropy(model(x), y) / META_BATCH
            task_error.backward()
            total += task_error.item()
        meta_opt.step()  # update the rule with the hypergradient
        learned_opt.step()  # update the model with the rule
        if it % 5 == 0:
            print(f"it {it:2d} meta-batch error {total:.4f} scales {learned_opt.log_scale.exp().mean().item():.3f}")


if __name__ == "__main__":
    main()
