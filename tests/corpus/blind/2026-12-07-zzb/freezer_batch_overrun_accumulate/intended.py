"""Ice-cream batch freezer control: predict the draw temperature and overrun of a batch
from barrel sensor traces, with a stage-by-stage cooling model that sums its stages.

Source: https://github.com/pytorch/pytorch/issues/20855 ("pytorch0.4 -> pytorch1.0.1
RuntimeError: one of the variables needed for gradient computation has been modified by
an inplace operation"). Code that trained on PyTorch 0.4 failed at ``loss.backward()`` on
1.0.1; the author resolved it by replacing ``a += b`` with ``a = a + b``.

Reduction (the writer's): the report gives only the accumulation; the model here is the
writer's. Each freezing stage gates the barrel state through a sigmoid and the stage's
contribution is added into that gated tensor with ``+=``; the sigmoid's backward needs
its own output, which the accumulation overwrote. Synthetic sensor traces, small sizes.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

SETTINGS = {
    "n_batches": 72,
    "trace_len": 30,
    "sensors": 5,
    "width": 24,
    "stages": 3,
    "minibatch": 12,
    "lr": 2e-3,
    "epochs": 2,
}


def freezer_logs(s):
    traces = torch.randn(s["n_batches"], s["sensors"], s["trace_len"]).cumsum(dim=2) * 0.1
    draw_temp = -5.0 - traces[:, 0, -5:].mean(dim=1, keepdim=True)
    overrun = 0.8 + 0.2 * torch.tanh(traces[:, 1:3, :].mean(dim=(1, 2))).unsqueeze(1)
    return traces, torch.cat([draw_temp, overrun], dim=1)


class CoolingStage(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.gate = nn.Linear(width, width)
        self.heat = nn.Linear(width, width)

    def forward(self, state):
        gated = torch.sigmoid(self.gate(state))
        gated = gated + 0.5 * torch.tanh(self.heat(state))
        return gated


class FreezerModel(nn.Module):
    def __init__(self, sensors, width, stages):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv1d(sensors, width, 5, padding=2), nn.GELU(),
                                     nn.AdaptiveAvgPool1d(1), nn.Flatten())
        self.stages = nn.ModuleList([CoolingStage(width) for _ in range(stages)])
        self.readout = nn.Linear(width, 2)

    def forward(self, traces):
        state = self.encoder(traces)
        for stage in self.stages:
            state = stage(state)
        return self.readout(state)


def run_epoch(model, traces, targets, optimiser, minibatch):
    perm = torch.randperm(traces.shape[0])
    for start in range(0, traces.shape[0], minibatch):
        idx = perm[start:start + minibatch]
        pred = model(traces[idx])
        temp_loss = F.smooth_l1_loss(pred[:, 0], targets[idx, 0])
        overrun_loss = F.mse_loss(pred[:, 1], targets[idx, 1])
        batch_loss = temp_loss + 4.0 * overrun_loss
        optimiser.zero_grad()
        batch_loss.backward()
        optimiser.step()
    return batch_loss.item()


def main():
    traces, targets = freezer_logs(SETTINGS)
    freezer_net = FreezerModel(SETTINGS["sensors"], SETTINGS["width"], SETTINGS["stages"])
    optimiser = torch.optim.AdamW(freezer_net.parameters(), lr=SETTINGS["lr"])
    for epoch in range(SETTINGS["epochs"]):
        last = run_epoch(freezer_net, traces, targets, optimiser, SETTINGS["minibatch"])
        print(f"epoch {epoch}: loss {last:.4f}")


if __name__ == "__main__":
    main()
