"""Washing-machine drum vibration diagnosis with an energy-normalised feature block.

Source: https://discuss.pytorch.org/t/whats-the-difference-between-nn-relu-and-nn-relu-inplace-true/948
The author built a GAN with nn.ReLU(inplace=True) layers to save memory and asks what inplace
changes for backpropagation. The answer: the activation overwrites its input instead of
allocating an output, which is only valid when nothing saved for the backward pass still needs
that input; when something does, autograd raises the in-place modification error, and the
module has to run out of place.

Reduction: accelerometer windows from a drum's spin cycle go through a conv front end whose
pre-activation also feeds an energy (norm) branch used to normalise the activated features; the
block's activation is nn.ReLU(inplace=True). Classes: healthy, unbalanced load, worn bearing,
loose shock absorber.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "n_windows": 80,
    "n_axes": 3,
    "win_len": 64,
    "n_classes": 4,
    "batch_size": 16,
    "epochs": 2,
    "lr": 1e-3,
}


def synth_spin_windows(cfg, gen):
    n, a, L = cfg["n_windows"], cfg["n_axes"], cfg["win_len"]
    t = torch.arange(L).float()
    label = torch.randint(0, cfg["n_classes"], (n,), generator=gen)
    x = 0.2 * torch.randn(n, a, L, generator=gen)
    drum = torch.sin(2 * math.pi * 3 * t / L)
    x += drum
    for i in range(n):
        c = int(label[i])
        if c == 1:
            x[i, 0] += 1.5 * drum
        elif c == 2:
            x[i, 1] += 0.6 * torch.sin(2 * math.pi * 17 * t / L)
        elif c == 3:
            x[i, 2] += 0.8 * torch.sign(torch.sin(2 * math.pi * 5 * t / L))
    return x, label


class EnergyNormBlock(nn.Module):
    def __init__(self, in_ch, out_ch, eps=1e-4):
        super().__init__()
        self.conv = nn.Conv1d(in_ch, out_ch, kernel_size=5, padding=2)
        self.act = nn.ReLU(inplace=True)
        self.eps = eps

    def forward(self, x):
        pre = self.conv(x)
        energy = pre.norm(dim=2, keepdim=True)
        h = self.act(pre)
        return h / (energy + self.eps)


class DrumFaultNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.block1 = EnergyNormBlock(cfg["n_axes"], 16)
        self.block2 = EnergyNormBlock(16, 16)
        self.classifier = nn.Linear(32, cfg["n_classes"])

    def forward(self, x):
        h = self.block2(F.max_pool1d(self.block1(x), 2))
        pooled = torch.cat([h.mean(dim=2), h.amax(dim=2)], dim=1)
        return self.classifier(pooled)


def run_epoch(net, optim, x, y, bs):
    total = 0.0
    for start in range(0, len(x), bs):
        logits = net(x[start:start + bs])
        fault_loss = F.cross_entropy(logits, y[start:start + bs])
        optim.zero_grad()
        fault_loss.backward()
        optim.step()
        total += fault_loss.item()
    return total


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(11)
    x, y = synth_spin_windows(CONFIG, gen)
    net = DrumFaultNet(CONFIG)
    optim = torch.optim.Adam(net.parameters(), lr=CONFIG["lr"])
    for epoch in range(CONFIG["epochs"]):
        total = run_epoch(net, optim, x, y, CONFIG["batch_size"])
        print(f"epoch {epoch}: fault loss {total:.3f}")


if __name__ == "__main__":
    main()
