"""Figure-skating jump rotation counting with a spiking encoder over boot gyroscope windows.

Source: https://github.com/zhouchenlin2096/QKFormer/issues/10

The report: the author trained QKFormer (a spiking transformer built on spikingjelly's multi-step
LIF neurons) with the loop they use for ordinary networks (forward, loss, zero_grad, backward,
step) and got "Trying to backward through the graph a second time" at the second iteration. The
neurons keep their membrane potential on the module from one batch to the next; spikingjelly's
examples reset every neuron (functional.reset_net) after each optimizer step, which the author's
loop did not do.

Reduction: a small spiking network whose LIF layers store their membrane potential ``self.v`` on
the module, reads a batch of gyroscope windows per step and classifies the number of revolutions of
the jump (single to quad), with the plain training loop of the report.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

CFG = {
    "time_steps": 12,
    "channels": 6,  # 3-axis gyroscope + 3-axis accelerometer
    "hidden": 32,
    "classes": 4,  # single, double, triple, quad
    "batch": 16,
    "lr": 2e-3,
    "steps": 6,
    "tau": 2.0,
    "v_threshold": 1.0,
}


def spike_fn(v, threshold, slope=4.0):
    """Heaviside spike with a sigmoid surrogate gradient."""
    soft = torch.sigmoid(slope * (v - threshold))
    hard = (v >= threshold).float()
    return hard + soft - soft.detach()


class MultiStepLIF(nn.Module):
    """Leaky integrate-and-fire neurons over a [T, B, C] sequence; the membrane lives on the module."""

    def __init__(self, tau, v_threshold):
        super().__init__()
        self.tau = tau
        self.v_threshold = v_threshold
        self.v = 0.0

    def reset(self):
        self.v = 0.0

    def forward(self, x_seq):
        spikes = []
        for x in x_seq:
            self.v = self.v + (x - self.v) / self.tau
            s = spike_fn(self.v, self.v_threshold)
            self.v = self.v * (1.0 - s)
            spikes.append(s)
        return torch.stack(spikes)


class RotationSNN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc_in = nn.Linear(cfg["channels"], cfg["hidden"])
        self.lif1 = MultiStepLIF(cfg["tau"], cfg["v_threshold"])
        self.fc_mid = nn.Linear(cfg["hidden"], cfg["hidden"])
        self.lif2 = MultiStepLIF(cfg["tau"], cfg["v_threshold"])
        self.head = nn.Linear(cfg["hidden"], cfg["classes"])

    def reset_states(self):
        for m in self.modules():
            if isinstance(m, MultiStepLIF):
                m.reset()

    def forward(self, x):  # x: [B, T, C]
        x_seq = x.transpose(0, 1)
        s1 = self.lif1(self.fc_in(x_seq) * 2.0)
        s2 = self.lif2(self.fc_mid(s1) * 2.0)
        rate = s2.mean(0)
        return self.head(rate)


def synthetic_jumps(n, cfg):
    """Gyroscope windows whose vertical-axis rate grows with the number of revolutions."""
    revs = torch.randint(0, cfg["classes"], (n,))
    t = torch.linspace(0, 1, cfg["time_steps"])
    x = 0.3 * torch.randn(n, cfg["time_steps"], cfg["channels"])
    x[:, :, 2] += (revs.float() + 1.0).unsqueeze(1) * torch.sin(3.14159 * t).unsqueeze(0)
    return x, revs


def main():
    snn = RotationSNN(CFG)
    opt = torch.optim.Adam(snn.parameters(), lr=CFG["lr"])
    windows, revs = synthetic_jumps(CFG["batch"] * CFG["steps"], CFG)

    snn.train()
    for step in range(CFG["steps"]):
        sl = slice(step * CFG["batch"], (step + 1) * CFG["batch"])
        logits = snn(windows[sl])
        rotation_loss = F.cross_entropy(logits, revs[sl])
        opt.zero_grad()
        rotation_loss.backward()
        opt.step()
        snn.reset_states()
        acc = (logits.argmax(1) == revs[sl]).float().mean().item()
        print(f"step {step} loss {rotation_loss.item():.4f} acc {acc:.2f}")


if __name__ == "__main__":
    main()
