"""Kiln firing controller trained with fake-quantised activations (int8 deployment on the kiln's PLC).

Source: https://github.com/intel/auto-round/pull/1389 ("[Regression] Detach scale tensor to prevent
holding computation graph references"). In auto-round, the attention and kv-cache modules kept a
quantisation scale tensor computed from a live activation; the tensor kept its reference into the
graph of the step that computed it, and later steps built on that stale graph. The PR detaches the
scale where it is kept.

This script moves the pattern to a kiln firing controller: a small network reads the last twelve
thermocouple readings of four kiln zones and predicts the burner power for the next minute. Its
hidden activations go through an 8-bit fake quantiser whose scale is calibrated on the first batch
it sees and then kept on the module, as a deployment-minded project writes it.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "zones": 4,
    "history": 12,
    "hidden": 48,
    "bits": 8,
    "batch": 32,
    "steps": 6,
    "lr": 2e-3,
}


def make_firing_logs(n, cfg, gen):
    """Synthetic bisque-firing logs: a ramp with zone offsets and noise; target is burner power (0..1)."""
    t = torch.linspace(0.0, 1.0, cfg["history"])
    ramp = 0.2 + 0.7 * t
    offsets = 0.05 * torch.randn(n, cfg["zones"], 1, generator=gen)
    temps = ramp + offsets + 0.02 * torch.randn(n, cfg["zones"], cfg["history"], generator=gen)
    setpoint = 0.95 * torch.ones(n, 1)
    error = setpoint - temps[:, :, -1].mean(dim=1, keepdim=True)
    slope = (temps[:, :, -1] - temps[:, :, -4]).mean(dim=1, keepdim=True)
    power = torch.sigmoid(6.0 * error - 4.0 * slope)
    return temps.flatten(1), power


class FakeQuant(nn.Module):
    """Symmetric per-tensor fake quantisation with a straight-through rounding."""

    def __init__(self, bits):
        super().__init__()
        self.qmax = 2 ** (bits - 1) - 1
        self.scale = None

    def calibrate(self, x):
        self.scale = x.detach().abs().amax() / self.qmax

    def forward(self, x):
        if self.scale is None:
            self.calibrate(x)
        xs = x / self.scale
        xq = xs + (torch.round(xs) - xs).detach()
        return torch.clamp(xq, -self.qmax, self.qmax) * self.scale


class KilnController(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.encoder = nn.Linear(cfg["zones"] * cfg["history"], cfg["hidden"])
        self.act_q = FakeQuant(cfg["bits"])
        self.head = nn.Linear(cfg["hidden"], 1)

    def forward(self, temps):
        h = torch.relu(self.encoder(temps))
        h = self.act_q(h)
        return torch.sigmoid(self.head(h))


class FiringSession:
    """One tuning session: owns the controller, its optimizer and the batches of logs."""

    def __init__(self, controller, cfg):
        self.controller = controller
        self.cfg = cfg
        self.opt = torch.optim.Adam(controller.parameters(), lr=cfg["lr"])
        self.history = []

    def step(self, temps, power):
        self.opt.zero_grad()
        pred = self.controller(temps)
        power_loss = F.mse_loss(pred, power)
        power_loss.backward()
        self.opt.step()
        self.history.append(power_loss.item())
        return power_loss.item()


def main():
    torch.manual_seed(11)
    gen = torch.Generator().manual_seed(12)
    cfg = CONFIG
    temps, power = make_firing_logs(cfg["batch"] * cfg["steps"], cfg, gen)
    controller = KilnController(cfg)
    session = FiringSession(controller, cfg)
    for i in range(cfg["steps"]):
        sl = slice(i * cfg["batch"], (i + 1) * cfg["batch"])
        loss = session.step(temps[sl], power[sl])
        print(f"step {i}: power mse {loss:.4f}")


if __name__ == "__main__":
    main()
