"""Seismic P/S phase picking with a reused, pinned-style input buffer.

Source: https://github.com/pytorch/pytorch/issues/197887
The report compares eager autograd with torch.compile: a training loop that reuses
its input buffer and refills it with the next batch (``x.copy_(next_batch)``) before
``backward()`` is stopped by eager PyTorch with "one of the variables needed for
gradient computation has been modified by an inplace operation", because the
matmul/convolution saved that input to compute the weight gradient.

Reduction: a small 1-D convolutional phase picker over three-component waveform
windows (synthetic arrivals). To overlap data preparation with compute, the loop keeps
one preallocated staging tensor, and the stream helper writes the next window into it
right after the forward pass, before the backward of the picking loss.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(23)

SETTINGS = {
    "components": 3,
    "samples": 128,
    "batch": 10,
    "steps": 6,
    "lr": 1e-3,
}


class WaveformStream:
    """Yields synthetic windows with a P and an S arrival and per-sample phase labels."""

    def __init__(self, cfg):
        self.cfg = cfg

    def next_window(self):
        n, c, t = self.cfg["batch"], self.cfg["components"], self.cfg["samples"]
        noise = 0.3 * torch.randn(n, c, t)
        p_idx = torch.randint(20, 60, (n,))
        s_idx = p_idx + torch.randint(20, 50, (n,))
        time = torch.arange(t)[None, :]
        p_pulse = torch.exp(-0.5 * ((time - p_idx[:, None]) / 2.0) ** 2)
        s_pulse = torch.exp(-0.5 * ((time - s_idx[:, None]) / 3.0) ** 2)
        wave = noise + p_pulse[:, None] * torch.tensor([1.0, 0.3, 0.3])[None, :, None] \
            + s_pulse[:, None] * torch.tensor([0.2, 1.0, 1.0])[None, :, None]
        labels = torch.zeros(n, t, dtype=torch.long)
        labels[torch.arange(n), p_idx] = 1
        labels[torch.arange(n), s_idx.clamp(max=t - 1)] = 2
        return wave, labels

    def fill(self, buffer):
        wave, labels = self.next_window()
        buffer.copy_(wave)
        return labels


class PhasePicker(nn.Module):
    def __init__(self, components, width=16):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv1d(components, width, 7, padding=3), nn.ReLU(),
            nn.Conv1d(width, width, 7, padding=3), nn.ReLU(),
        )
        self.head = nn.Conv1d(width, 3, 1)  # noise, P, S

    def forward(self, wave):
        return self.head(self.encoder(wave))


def picking_loss(logits, labels):
    weights = torch.tensor([0.05, 1.0, 1.0])
    return F.cross_entropy(logits, labels, weight=weights)


def run(cfg):
    stream = WaveformStream(cfg)
    picker = PhasePicker(cfg["components"])
    optim = torch.optim.AdamW(picker.parameters(), lr=cfg["lr"], weight_decay=1e-4)
    staging = torch.empty(cfg["batch"], cfg["components"], cfg["samples"])
    labels = stream.fill(staging)
    for step in range(cfg["steps"]):
        logits = picker(staging)
        pick_loss = picking_loss(logits, labels)
        next_labels = stream.fill(staging)
        optim.zero_grad()
        pick_loss.backward()
        optim.step()
        labels = next_labels
        print(f"step {step}: picking loss {pick_loss.item():.4f}")


if __name__ == "__main__":
    run(SETTINGS)
