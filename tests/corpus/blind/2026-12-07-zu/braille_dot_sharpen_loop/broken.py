"""Braille cell transcription: six dot probabilities per cell from a small CNN over embossed-page patches.

Source: https://stackoverflow.com/questions/50753477/what-does-data-norm-1000-do-in-pytorch
The question is about the autograd tutorial loop ``y = x * 2; while y.data.norm() < 1000:
y = y * 2``: what ``data.norm()`` measures, and the loop that keeps doubling a tensor that
requires grad until its norm crosses a threshold. The writer reduces that loop as a
project writes it with an in-place update: the dot probabilities of faint scans are scaled
up in a ``while`` loop on their norm before the loss, with ``*=`` on the sigmoid's output.
The setting (6-dot braille cells from embossed-page patches, faint scans boosted to a
norm floor) is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

CFG = {"cells": 160, "patch": 12, "batch": 20, "epochs": 2, "lr": 1e-3, "norm_floor": 2.2}


def make_cells(n, size):
    """Synthetic embossed patches: each of the six dot positions raised (1) or flat (0), plus noise."""
    dots = (torch.rand(n, 6) > 0.5).float()
    patches = 0.1 * torch.randn(n, 1, size, size)
    for k in range(6):
        r, c = 2 + (k % 3) * 3, 3 + (k // 3) * 5
        patches[:, 0, r:r + 2, c:c + 2] += dots[:, k].view(n, 1, 1) * 0.8
    return patches, dots


class CellReader(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.fc = nn.Linear(8 * 6 * 6, 6)

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))


def dot_probabilities(logits, floor):
    """Sigmoid dot probabilities, boosted for faint cells until the cell's norm reaches the floor."""
    probs = torch.sigmoid(logits)
    while probs.detach().norm(dim=1).min() < floor:
        probs *= 1.25
    return probs


def main():
    patches, dots = make_cells(CFG["cells"], CFG["patch"])
    reader = CellReader()
    opt = torch.optim.SGD(reader.parameters(), lr=CFG["lr"], momentum=0.9)
    for epoch in range(CFG["epochs"]):
        order = torch.randperm(patches.shape[0])
        for i in range(0, patches.shape[0], CFG["batch"]):
            idx = order[i:i + CFG["batch"]]
            probs = dot_probabilities(reader(patches[idx]), CFG["norm_floor"])
            dot_loss = F.mse_loss(probs, dots[idx])
            opt.zero_grad()
            dot_loss.backward()
            opt.step()
        print(f"epoch {epoch}: dot loss {dot_loss.item():.4f}")


if __name__ == "__main__":
    main()
