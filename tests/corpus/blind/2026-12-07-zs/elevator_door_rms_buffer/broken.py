"""Elevator door fault prediction from door-operator motor current.

Source: https://github.com/pytorch/pytorch/issues/22095 ("Inplace error if DistributedDataParallel
module that contains a buffer is called twice"). The reporter's module multiplies by a registered
buffer in its forward; DDP writes the buffers in place (its buffer broadcast) at the start of every
forward call, so when the module is called twice before ``backward()`` the buffer saved by the
first call has been modified: "one of the variables needed for gradient computation has been
modified by an inplace operation". The reporter notes that ``self.buf.clone()`` in the forward
avoids it.

Reduction, without DDP: the in-place write to the buffer is the module's own running-RMS update of
the motor current (under ``no_grad``, as a BatchNorm-style statistic), and the encoder is called
twice per door cycle (opening stroke, closing stroke) before one backward. The training setting is
the writer's.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

SETTINGS = {"channels": 3, "samples": 64, "cycles": 60, "batch": 12, "lr": 1e-3, "momentum": 0.1,
            "faults": ["ok", "roller_wear", "belt_slack", "obstruction"]}


class CurrentRMSNorm(nn.Module):
    """Per-phase clamp gain, then scaling by a running RMS kept as a buffer."""

    def __init__(self, channels, momentum):
        super().__init__()
        self.momentum = momentum
        self.gain = nn.Parameter(torch.ones(channels))
        self.register_buffer("running_rms", torch.ones(channels))

    def forward(self, x):
        if self.training:
            with torch.no_grad():
                rms = x.pow(2).mean(dim=(0, 2)).sqrt()
                self.running_rms.mul_(1 - self.momentum).add_(self.momentum * rms)
        return (x * self.gain[None, :, None]) / self.running_rms[None, :, None]


class StrokeEncoder(nn.Module):
    def __init__(self, channels, momentum):
        super().__init__()
        self.norm = CurrentRMSNorm(channels, momentum)
        self.conv = nn.Sequential(
            nn.Conv1d(channels, 16, 5, padding=2), nn.ReLU(),
            nn.Conv1d(16, 16, 5, padding=2, stride=2), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1),
        )

    def forward(self, x):
        return self.conv(self.norm(x)).squeeze(-1)


class DoorFaultModel(nn.Module):
    def __init__(self, settings):
        super().__init__()
        self.encoder = StrokeEncoder(settings["channels"], settings["momentum"])
        self.classifier = nn.Linear(32, len(settings["faults"]))

    def forward(self, opening, closing):
        z_open = self.encoder(opening)
        z_close = self.encoder(closing)
        return self.classifier(torch.cat([z_open, z_close], dim=1))


def door_cycles(gen, s):
    n, c, t = s["cycles"], s["channels"], s["samples"]
    label = torch.randint(0, len(s["faults"]), (n,), generator=gen)
    time = torch.linspace(0, 1, t)
    profile = torch.sin(torch.pi * time)[None, None, :] * torch.ones(n, c, 1)
    opening = 4.0 * profile + 0.3 * torch.randn(n, c, t, generator=gen)
    closing = 3.0 * profile + 0.3 * torch.randn(n, c, t, generator=gen)
    opening = opening + (label == 1).float()[:, None, None] * 0.8 * time
    closing = closing * (1 + 0.4 * (label == 2).float()[:, None, None])
    closing[:, :, t // 2:] += 2.0 * (label == 3).float()[:, None, None]
    return opening, closing, label


def fit(model, optimizer, data, s):
    opening, closing, label = data
    model.train()
    for start in range(0, s["cycles"], s["batch"]):
        sl = slice(start, start + s["batch"])
        logits = model(opening[sl], closing[sl])
        fault_loss = F.cross_entropy(logits, label[sl])
        optimizer.zero_grad()
        fault_loss.backward()
        optimizer.step()
        print(f"cycles {start:3d}: fault loss {fault_loss.item():.4f}")


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(11)
    data = door_cycles(gen, SETTINGS)
    model = DoorFaultModel(SETTINGS)
    optimizer = torch.optim.Adam(model.parameters(), lr=SETTINGS["lr"])
    fit(model, optimizer, data, SETTINGS)


if __name__ == "__main__":
    main()
