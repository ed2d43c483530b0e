"""Satellite housekeeping-telemetry anomaly scorer trained as a two-stage pipeline.

Source: https://github.com/pytorch/pytorch/issues/96265
"RuntimeError: one of the variables needed for gradient computation has been
modified by an inplace operation" (pytorch/pytorch issue #96265).

The report's author was running PipeDream (pipeline-parallel training, an AlexNet
split into stages, `runtime.run_forward()` / `run_backward()` driven by a 1F1B
schedule) on a newer torch (1.1.0 -> 1.11.0).  The backward of a stage failed in
ConvolutionBackward0 with the in-place error: while several micro-batches are in
flight, the optimizer steps the stage's weights in place after the backward of an
earlier micro-batch, before the backward of a later micro-batch whose forward had
saved those same weights.  Torch 1.1 did not check weight versions; 1.5+ does.
The thread has no accepted answer; the evident intent is plain pipelined training
whose gradients are taken against the weights each micro-batch actually saw, as a
GPipe-style schedule does by stepping only once the in-flight micro-batches are
all backwarded.

Reduction: two `nn.Module` stages (1-D conv trunk over telemetry channels, conv +
linear anomaly head) and a small `PipelineRunner` that keeps a queue of in-flight
micro-batches and, as PipeDream does, calls `optimizer.step()` after every
micro-batch backward.  The first micro-batch is a warm-up with nothing else in
flight (it trains and steps fine); then the pipeline fills to two in-flight
micro-batches, the second Adam step lands between the forward and the backward
of the third micro-batch, and its backward fails.  The satellite-telemetry setting is mine, not the report's.
"""
import collections

import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "channels": 6,
    "window": 32,
    "hidden": 16,
    "micro_batch": 8,
    "micro_batches_per_epoch": 6,
    "epochs": 3,
    "warmup_micro_batches": 1,
    "in_flight_after_warmup": 2,
    "lr": 1e-3,
}


class TelemetryTrunk(nn.Module):
    """Stage 0: convolutions over the housekeeping channels."""

    def __init__(self, channels, hidden):
        super().__init__()
        self.conv1 = nn.Conv1d(channels, hidden, kernel_size=5, padding=2)
        self.conv2 = nn.Conv1d(hidden, hidden, kernel_size=3, padding=1)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        return F.relu(self.conv2(x))


class AnomalyHead(nn.Module):
    """Stage 1: one more convolution, pooling, and a logit per window."""

    def __init__(self, hidden):
        super().__init__()
        self.conv = nn.Conv1d(hidden, hidden, kernel_size=3, padding=1)
        self.out = nn.Linear(hidden, 1)

    def forward(self, h):
        h = F.relu(self.conv(h))
        return self.out(h.mean(dim=2)).squeeze(1)


class PipelineRunner:
    """Keeps a queue of in-flight micro-batches, 1F1B style."""

    def __init__(self, stages, optimizer):
        self.stages = stages
        self.optimizer = optimizer
        self.in_flight = collections.deque()
        self.losses = []

    def run_forward(self, x, y):
        h = x
        for stage in self.stages:
            h = stage(h)
        loss = F.binary_cross_entropy_with_logits(h, y)
        self.in_flight.append(loss)

    def run_backward(self):
        loss = self.in_flight.popleft()
        self.optimizer.zero_grad()
        loss.backward()
        # weight update straight after each micro-batch's backward
        self.optimizer.step()
        self.losses.append(loss.item())


def make_telemetry(n, channels, window):
    t = torch.linspace(0, 6.28, window)
    base = torch.sin(t)[None, None, :] * torch.rand(n, channels, 1)
    noise = 0.1 * torch.randn(n, channels, window)
    labels = (torch.rand(n) < 0.3).float()
    spikes = labels[:, None, None] * (torch.rand(n, channels, window) < 0.05).float() * 3.0
    return base + noise + spikes, labels


def main():
    torch.manual_seed(0)
    hp = HPARAMS
    n = hp["micro_batch"] * hp["micro_batches_per_epoch"]
    x_all, y_all = make_telemetry(n, hp["channels"], hp["window"])

    trunk = TelemetryTrunk(hp["channels"], hp["hidden"])
    head = AnomalyHead(hp["hidden"])
    optimizer = torch.optim.Adam(list(trunk.parameters()) + list(head.parameters()), lr=hp["lr"])
    runner = PipelineRunner([trunk, head], optimizer)

    seen = 0
    for epoch in range(hp["epochs"]):
        order = torch.randperm(n)
        for mb in range(hp["micro_batches_per_epoch"]):
            # warm-up: one micro-batch in flight, then fill the pipeline
            depth = 1 if seen < hp["warmup_micro_batches"] else hp["in_flight_after_warmup"]
            idx = order[mb * hp["micro_batch"]:(mb + 1) * hp["micro_batch"]]
            runner.run_forward(x_all[idx], y_all[idx])
            seen += 1
            if len(runner.in_flight) >= depth:
                runner.run_backward()
        while runner.in_flight:
            runner.run_backward()
        recent = runner.losses[-hp["micro_batches_per_epoch"]:]
        print(f"epoch {epoch} mean loss {sum(recent) / len(recent):.4f}")


if __name__ == "__main__":
    main()
