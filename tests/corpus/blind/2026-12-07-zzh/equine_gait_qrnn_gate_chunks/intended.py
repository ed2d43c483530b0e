"""Equine gait lameness grading from hoof/withers IMU strides with a QRNN-style recurrent layer.

Source: https://github.com/pytorch/pytorch/issues/18189 ("[CPU] several inplace functions fail
since 1.0.1 on certain hw"). The author, maintaining a QRNN implementation, projects the input
with one ``nn.Linear`` to three times the hidden size, splits the result into the z, f and o
gates with ``y.chunk(3, dim=2)`` and then applies the gate activations in place on the chunks
(``z_gate.tanh_()``, ``f_gate.sigmoid_()``), before the forget-mult recurrence. The report was
about the values of those in-place activations; on current PyTorch the chunks are views of a
multi-output function and the same in-place activations are refused outright.

This script moves that QRNN layer into a lameness grader: strides from a horse-worn inertial
sensor are encoded by a QRNN layer (gate projection, chunk, in-place gate activations,
forget-mult over time), pooled, and fed to a lameness-grade head (sound, grade 1 to 3) and an
affected-limb head. One Adam optimizer trains the whole network on the sum of the two losses.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "seed": 11,
    "n_horses": 48,
    "stride_len": 40,
    "channels": 6,  # 3-axis accel + 3-axis gyro
    "hidden": 24,
    "n_grades": 4,
    "n_limbs": 4,
    "batch": 12,
    "epochs": 3,
    "lr": 3e-3,
}


def synth_strides(cfg):
    """Synthetic IMU strides: a lame limb shortens one half of the stride and adds asymmetry."""
    n, t, c = cfg["n_horses"], cfg["stride_len"], cfg["channels"]
    phase = torch.linspace(0, 2 * torch.pi, t)
    grades = torch.randint(0, cfg["n_grades"], (n,))
    limbs = torch.randint(0, cfg["n_limbs"], (n,))
    base = torch.stack([torch.sin(phase * (k + 1)) for k in range(c)], dim=-1)
    strides = base.unsqueeze(0).repeat(n, 1, 1)
    asym = (grades.float() * 0.25).view(n, 1, 1)
    half = (phase < torch.pi).float().view(1, t, 1)
    limb_axis = F.one_hot(limbs, cfg["n_limbs"]).float()
    strides[:, :, : cfg["n_limbs"]] += asym * half * limb_axis.unsqueeze(1)
    strides += 0.1 * torch.randn(n, t, c)
    return strides, grades, limbs


class QRNNLayer(nn.Module):
    """Quasi-recurrent layer: gates from one projection, forget-mult pooling over time."""

    def __init__(self, in_dim, hidden):
        super().__init__()
        self.hidden = hidden
        self.gates = nn.Linear(in_dim, 3 * hidden)

    def forget_mult(self, z, f):
        c = torch.zeros_like(z[:, 0])
        states = []
        for t in range(z.size(1)):
            c = f[:, t] * c + (1 - f[:, t]) * z[:, t]
            states.append(c)
        return torch.stack(states, dim=1)

    def forward(self, x):
        y = self.gates(x)
        z_gate, f_gate, o_gate = y.chunk(3, dim=2)
        z_gate = torch.tanh(z_gate)
        f_gate = torch.sigmoid(f_gate)
        o_gate = torch.sigmoid(o_gate)
        c = self.forget_mult(z_gate, f_gate)
        return o_gate * c


class GaitGrader(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.qrnn = QRNNLayer(cfg["channels"], cfg["hidden"])
        self.grade_head = nn.Linear(cfg["hidden"], cfg["n_grades"])
        self.limb_head = nn.Linear(cfg["hidden"], cfg["n_limbs"])

    def forward(self, strides):
        h = self.qrnn(strides)
        pooled = h.mean(dim=1)
        return self.grade_head(pooled), self.limb_head(pooled)


def batches(strides, grades, limbs, batch):
    for start in range(0, strides.size(0), batch):
        sl = slice(start, start + batch)
        yield strides[sl], grades[sl], limbs[sl]


def train(cfg):
    torch.manual_seed(cfg["seed"])
    strides, grades, limbs = synth_strides(cfg)
    gait_net = GaitGrader(cfg)
    optimizer = torch.optim.Adam(gait_net.parameters(), lr=cfg["lr"])

    for epoch in range(cfg["epochs"]):
        total = 0.0
        for x, g, l in batches(strides, grades, limbs, cfg["batch"]):
            grade_logits, limb_logits = gait_net(x)
            grade_loss = F.cross_entropy(grade_logits, g)
            lame = g > 0
            limb_loss = F.cross_entropy(limb_logits[lame], l[lame]) if lame.any() else limb_logits.sum() * 0.0
            optimizer.zero_grad()
            (grade_loss + 0.5 * limb_loss).backward()
            optimizer.step()
            total += grade_loss.item()
        print(f"epoch {epoch}: grade loss {total:.4f}")


if __name__ == "__main__":
    train(CONFIG)
