"""OBD-II fault-code classifier with a running-statistics normalisation layer (intended).

Corrected as the running batch-norm the issue quotes does it: the running
statistics are updated under `torch.no_grad()`, so the buffers hold values, not
the batch's graph, and each backward only walks its own batch.  Seeds, data and
the order of random draws are those of broken.py.

The original docstring follows.


Source: https://github.com/pytorch/pytorch/issues/17990
"[jit] support general buffer mutation" (pytorch/pytorch issue #17990).

The issue is about a layer that registers running statistics as buffers,
`self.register_buffer('means', torch.zeros(1, nf, 1, 1))`, and in `forward`
reassigns them from the batch statistic `m`:
`self.means = self.means.mul(self.mom).add(1 - self.mom, m)` (the running
batch-norm of the fast.ai course).  TorchScript could not compile the assignment;
the in-place rewrite was offered as a workaround, and a later commenter
(bethebunny, writing a scriptable spectral norm) reports that "this buffer assign
pattern has some very weird interactions with the autograd engine".  In eager
mode the interaction is this: `m` is computed from the activations, so the
reassigned buffer carries the batch's graph; the layer then normalises the next
batch with it, and the next `loss.backward()` walks back into the previous
batch's graph, whose saved tensors the previous backward freed.  The evident
intent is a running statistic that is a plain value: updated without recording
a graph, as the original running batch-norm does under `torch.no_grad()`.

Reduction: a 1-D conv classifier over windows of OBD-II signals (rpm, load,
coolant and intake temperatures, fuel trims, MAF, O2 voltage) for five fault
classes, with a `RunningBatchNorm` module that reassigns its `means` / `vars`
buffers from the batch statistics as in the issue and normalises with the running
values.  The first batch trains; the second batch's backward fails.  The
automotive setting is mine.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "signals": 8,
    "window": 30,
    "filters": 16,
    "classes": 5,
    "batch_size": 16,
    "batches": 6,
    "epochs": 2,
    "lr": 3e-3,
    "mom": 0.9,
}


class RunningBatchNorm(nn.Module):
    def __init__(self, nf, mom=0.9, eps=1e-5):
        super().__init__()
        self.mom, self.eps = mom, eps
        self.mults = nn.Parameter(torch.ones(1, nf, 1))
        self.adds = nn.Parameter(torch.zeros(1, nf, 1))
        self.register_buffer("means", torch.zeros(1, nf, 1))
        self.register_buffer("vars", torch.ones(1, nf, 1))

    @torch.no_grad()
    def update_stats(self, x):
        m = x.mean((0, 2), keepdim=True)
        v = x.var((0, 2), keepdim=True)
        self.means = self.means.mul(self.mom).add(m, alpha=1 - self.mom)
        self.vars = self.vars.mul(self.mom).add(v, alpha=1 - self.mom)

    def forward(self, x):
        if self.training:
            self.update_stats(x)
        x = (x - self.means) / (self.vars + self.eps).sqrt()
        return x * self.mults + self.adds


class FaultClassifier(nn.Module):
    def __init__(self, signals, filters, classes, mom):
        super().__init__()
        self.conv1 = nn.Conv1d(signals, filters, kernel_size=5, padding=2)
        self.norm1 = RunningBatchNorm(filters, mom=mom)
        self.conv2 = nn.Conv1d(filters, filters, kernel_size=3, padding=1)
        self.norm2 = RunningBatchNorm(filters, mom=mom)
        self.head = nn.Linear(filters, classes)

    def forward(self, x):
        x = F.relu(self.norm1(self.conv1(x)))
        x = F.relu(self.norm2(self.conv2(x)))
        return self.head(x.mean(dim=2))


def make_obd_batches(hp):
    batches = []
    for _ in range(hp["batches"]):
        codes = torch.randint(0, hp["classes"], (hp["batch_size"],))
        x = torch.randn(hp["batch_size"], hp["signals"], hp["window"])
        # each fault class drifts one signal
        x[torch.arange(hp["batch_size"]), codes] += 1.5
        batches.append((x, codes))
    return batches


def train_epoch(model, batches, optimizer, epoch):
    model.train()
    total = 0.0
    for x, codes in batches:
        logits = model(x)
        loss = F.cross_entropy(logits, codes)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total / len(batches):.4f}")


def main():
    torch.manual_seed(3)
    hp = HPARAMS
    batches = make_obd_batches(hp)
    model = FaultClassifier(hp["signals"], hp["filters"], hp["classes"], hp["mom"])
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    for epoch in range(hp["epochs"]):
        train_epoch(model, batches, optimizer, epoch)


if __name__ == "__main__":
    main()
