"""Lottery-ticket search by iterative magnitude pruning, logging each round's saved activations.

Report: https://github.com/facebookresearch/dlrm/issues/71 -- with ``--plot-compute-graph`` DLRM
drew the autograd graph with torchviz's ``make_dot`` right after ``E.backward()``; walking the
graph reads each node's saved tensors, which the backward had already freed, and failed with
"Trying to backward through the graph a second time, but the buffers have already been freed".
The maintainer's answer: call ``E.backward(retain_graph=True)`` on that step. The training setting
is the writer's: a masked MLP is trained, the smallest surviving weights of each layer are
pruned, the survivors are rewound to their early (iteration-1) values and retrained; on the
first step of every round a small graph walker reports how many bytes of activations the
sparse network saved for backward -- called after ``loss.backward()``.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

ROUNDS, STEPS_PER_ROUND, PRUNE_FRAC = 3, 6, 0.2


class MaskedLinear(nn.Linear):
    def __init__(self, d_in, d_out):
        super().__init__(d_in, d_out)
        self.register_buffer("mask", torch.ones_like(self.weight))

    def forward(self, x):
        return F.linear(x, self.weight * self.mask, self.bias)


class LeNet300(nn.Module):
    def __init__(self, d_in=64, n_classes=5):
        super().__init__()
        self.fc1 = MaskedLinear(d_in, 96)
        self.fc2 = MaskedLinear(96, 32)
        self.fc3 = MaskedLinear(32, n_classes)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def saved_activation_bytes(loss):
    """Walk the autograd graph and add up the tensors each node saved for backward."""
    seen, stack, total = set(), [loss.grad_fn], 0
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for name in dir(node):
            if name.startswith("_saved_"):
                val = getattr(node, name)
                if isinstance(val, torch.Tensor):
                    total += val.numel() * val.element_size()
        stack.extend(fn for fn, _ in node.next_functions)
    return total


def prune_by_magnitude(model, frac):
    with torch.no_grad():
        for layer in (model.fc1, model.fc2, model.fc3):
            alive = layer.weight[layer.mask.bool()].abs()
            k = max(1, int(frac * alive.numel()))
            threshold = alive.kthvalue(k).values
            layer.mask.mul_((layer.weight.abs() > threshold).float())


def rewind(model, state):
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(state[name])


centers = torch.randn(5, 64) * 1.5
y_all = torch.randint(0, 5, (640,))
x_all = centers[y_all] + torch.randn(640, 64)

model = LeNet300()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
rewind_state = None

for rnd in range(ROUNDS):
    for step in range(STEPS_PER_ROUND):
        idx = torch.randint(0, 640, (64,))
        loss = F.cross_entropy(model(x_all[idx]), y_all[idx])
        optimizer.zero_grad()
        loss.backward()
        if step == 0:
            print(f"round {rnd}: {saved_activation_bytes(loss)} bytes saved for backward")
        optimizer.step()
        if rnd == 0 and step == 0:
            rewind_state = {k: v.detach().clone() for k, v in model.named_parameters()}
    density = sum(l.mask.sum().item() for l in (model.fc1, model.fc2, model.fc3)) / sum(
        l.mask.numel() for l in (model.fc1, model.fc2, model.fc3))
    print(f"round {rnd} loss {loss.item():.3f} density {density:.2f}")
    prune_by_magnitude(model, PRUNE_FRAC)
    rewind(model, rewind_state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
