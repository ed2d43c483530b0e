"""Peatland carbon-flux gap filling with an Xception-style 1-D separable-convolution network.

Source: https://github.com/mapillary/inplace_abn/issues/40 ("how to use a single relu or bn": the
author converted an Xception net, whose ``Block`` keeps one ``self.relu = nn.ReLU(inplace=True)``
and puts it first in ``rep`` when ``start_with_relu`` is set, next to a ``skip`` convolution of the
same block input; training then failed with "one of the variables needed for gradient computation
has been modified by an inplace operation").

Reduction: half-hourly drivers of an eddy-covariance tower on a peatland (light, air and soil
temperature, water-table depth, vapour-pressure deficit) go through separable-convolution blocks
built like Xception's, to predict net ecosystem exchange and methane flux for the same half-hours.
Each block computes its skip projection of the input first, then runs ``rep``, which starts with
the block's shared in-place ReLU. The training setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {"seed": 21, "windows": 32, "steps": 48, "drivers": 5, "width": 24, "lr": 1e-3,
           "epochs": 4, "ch4_weight": 0.5}


class SeparableConv1d(nn.Module):
    def __init__(self, cin, cout, k=3):
        super().__init__()
        self.depthwise = nn.Conv1d(cin, cin, k, padding=k // 2, groups=cin, bias=False)
        self.pointwise = nn.Conv1d(cin, cout, 1, bias=False)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


class Block(nn.Module):
    def __init__(self, cin, cout, reps, start_with_relu=True):
        super().__init__()
        if cin != cout:
            self.skip = nn.Conv1d(cin, cout, 1, bias=False)
            self.skipbn = nn.BatchNorm1d(cout)
        else:
            self.skip = None
        self.relu = nn.ReLU(inplace=True)
        rep = []
        if start_with_relu:
            rep.append(nn.ReLU(inplace=False))
        rep += [SeparableConv1d(cin, cout), nn.BatchNorm1d(cout)]
        for _ in range(reps - 1):
            rep += [self.relu, SeparableConv1d(cout, cout), nn.BatchNorm1d(cout)]
        self.rep = nn.Sequential(*rep)

    def forward(self, inp):
        if self.skip is not None:
            skip = self.skipbn(self.skip(inp))
        else:
            skip = inp
        x = self.rep(inp)
        return x + skip


class PeatFluxNet(nn.Module):
    def __init__(self, drivers, width):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv1d(drivers, width, 3, padding=1, bias=False), nn.BatchNorm1d(width))
        self.blocks = nn.Sequential(
            Block(width, 2 * width, reps=2, start_with_relu=True),
            Block(2 * width, 2 * width, reps=2, start_with_relu=True),
        )
        self.head = nn.Conv1d(2 * width, 2, 1)

    def forward(self, drivers):
        return self.head(self.blocks(self.stem(drivers)))


def synth_tower(cfg):
    t = torch.arange(cfg["steps"], dtype=torch.float32) / 48.0
    phase = 2 * torch.pi * (t[None] + torch.rand(cfg["windows"], 1))
    par = F.relu(torch.sin(phase)) * (0.7 + 0.3 * torch.rand(cfg["windows"], 1))
    air = 0.5 * torch.sin(phase - 0.5) + 0.1 * torch.randn(cfg["windows"], cfg["steps"])
    soil = 0.3 * torch.sin(phase - 1.2) + 0.05 * torch.randn(cfg["windows"], cfg["steps"])
    water_table = -0.2 + 0.1 * torch.randn(cfg["windows"], 1).expand(-1, cfg["steps"])
    vpd = F.relu(air) * 0.8 + 0.05 * torch.randn(cfg["windows"], cfg["steps"])
    drivers = torch.stack([par, air, soil, water_table, vpd], dim=1)
    nee = -1.5 * par / (0.3 + par) + 0.4 * torch.exp(0.8 * soil)
    ch4 = 0.3 * torch.exp(0.5 * soil) * torch.sigmoid(10 * (water_table + 0.2))
    return drivers, torch.stack([nee, ch4], dim=1)


def train_epoch(model, optimizer, drivers, fluxes, cfg):
    model.train()
    pred = model(drivers)
    flux_loss = F.mse_loss(pred[:, 0], fluxes[:, 0]) + cfg["ch4_weight"] * F.mse_loss(pred[:, 1], fluxes[:, 1])
    optimizer.zero_grad()
    flux_loss.backward()
    optimizer.step()
    return flux_loss.item()


def main():
    cfg = HPARAMS
    torch.manual_seed(cfg["seed"])
    drivers, fluxes = synth_tower(cfg)
    model = PeatFluxNet(cfg["drivers"], cfg["width"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=1e-4)
    for epoch in range(cfg["epochs"]):
        print(f"epoch {epoch} flux loss {train_epoch(model, optimizer, drivers, fluxes, cfg):.5f}")


if __name__ == "__main__":
    main()
