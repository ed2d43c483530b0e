"""Blacksmith forge: billet core temperature from pyrometer and thermocouple traces (1-D residual CNN).

Source: https://github.com/pytorch/vision/issues/807

The report: a user asked why torchvision's models use nn.ReLU(inplace=True). The maintainer answered
that it saves memory and is safe where torchvision puts it, and showed the unsafe case: inverting the
residual sum and the ReLU of a ResNet block (a pre-activation ordering),
    out = self.relu(out)
    out += identity
fails in backward with "one of the variables needed for gradient computation has been modified by an
inplace operation".

Reduction: a forge monitor regresses the billet's core temperature from a window of surface
pyrometer and furnace thermocouple readings with a stack of 1-D residual blocks that activate before
adding the shortcut, sharing one in-place ReLU as torchvision's blocks do.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

SENSORS = 4  # surface pyrometer, furnace thermocouple, blower duty, ambient
WINDOW = 48
CONFIG = {"width": 16, "blocks": 2, "batch": 12, "lr": 1e-3, "steps": 5}


class ResidualBlock1d(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.conv1 = nn.Conv1d(ch, ch, 5, padding=2, bias=False)
        self.bn1 = nn.BatchNorm1d(ch)
        self.conv2 = nn.Conv1d(ch, ch, 5, padding=2, bias=False)
        self.bn2 = nn.BatchNorm1d(ch)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out = self.relu(out)
        out = out + identity
        return out


class BilletTempNet(nn.Module):
    def __init__(self, width, blocks):
        super().__init__()
        self.stem = nn.Conv1d(SENSORS, width, 3, padding=1)
        self.blocks = nn.Sequential(*[ResidualBlock1d(width) for _ in range(blocks)])
        self.head = nn.Linear(width, 1)

    def forward(self, traces):
        h = self.blocks(self.stem(traces))
        return self.head(h.mean(-1)).squeeze(-1)


def forge_traces(n):
    t = torch.linspace(0, 1, WINDOW)
    heat = torch.rand(n, 1) * 0.8 + 0.2
    surface = heat * (1 - torch.exp(-4 * t)) + 0.02 * torch.randn(n, WINDOW)
    furnace = heat * 1.2 + 0.05 * torch.randn(n, WINDOW)
    blower = (torch.rand(n, 1) > 0.5).float().expand(n, WINDOW)
    ambient = 0.1 * torch.ones(n, WINDOW)
    traces = torch.stack([surface, furnace, blower, ambient], dim=1)
    core = 0.85 * heat.squeeze(1) + 0.1 * blower[:, 0]
    return traces, core


class Trainer:
    def __init__(self, model, cfg):
        self.model = model
        self.cfg = cfg
        self.adam = torch.optim.Adam(model.parameters(), lr=cfg["lr"])

    def fit_step(self, traces, core):
        self.model.train()
        pred = self.model(traces)
        temp_loss = F.mse_loss(pred, core)
        self.adam.zero_grad()
        temp_loss.backward()
        self.adam.step()
        return temp_loss.item()


def main():
    net = BilletTempNet(CONFIG["width"], CONFIG["blocks"])
    trainer = Trainer(net, CONFIG)
    for step in range(CONFIG["steps"]):
        traces, core = forge_traces(CONFIG["batch"])
        print(f"step {step} mse {trainer.fit_step(traces, core):.5f}")


if __name__ == "__main__":
    main()
