"""Canoe / kayak slalom: per-frame gate-passage detection and split timing from boat IMU traces.

Source: https://github.com/lyongo/NWPU-MOC/issues/4 ("gradient computation problems").
Running the repository's train.py, the user got "one of the variables needed for
gradient computation has been modified by an inplace operation ... output 0 of
ReluBackward0"; turning ``inplace=True`` off did not help. The answer pointed at
the FPN head's top-down pathway, ``laterals[i - 1] += F.interpolate(laterals[i],
size=prev_shape, mode='nearest')``: changing ``+=`` into ``=`` of a sum fixed it.

Reduction: the same top-down pathway, 1-D. The setting is the writer's: an FPN
over a run's IMU trace (yaw rate, roll, paddle-shaft acceleration) whose lateral
projections end in a ReLU, a per-frame gate-passage head trained with BCE and a
run-level split-time head trained with smooth L1.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

RUN = {"frames": 64, "channels": 3, "n_runs": 8, "n_gates": 6, "lr": 1e-3, "epochs": 4}


class ConvStage(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, 3, stride=stride, padding=1)
        self.norm = nn.BatchNorm1d(c_out)

    def forward(self, x):
        return F.relu(self.norm(self.conv(x)))


class LateralFPN(nn.Module):
    def __init__(self, in_channels=(16, 32, 48), width=16):
        super().__init__()
        self.lateral = nn.ModuleList(
            [nn.Sequential(nn.Conv1d(c, width, 1), nn.ReLU()) for c in in_channels]
        )
        self.smooth = nn.Conv1d(width, width, 3, padding=1)

    def forward(self, feats):
        laterals = [proj(f) for proj, f in zip(self.lateral, feats)]
        for i in range(len(laterals) - 1, 0, -1):
            prev_len = laterals[i - 1].shape[-1]
            laterals[i - 1] += F.interpolate(laterals[i], size=prev_len, mode="nearest")
        return self.smooth(laterals[0])


class GateTimingNet(nn.Module):
    def __init__(self, channels, n_gates):
        super().__init__()
        self.stages = nn.ModuleList([ConvStage(channels, 16, 1), ConvStage(16, 32, 2), ConvStage(32, 48, 2)])
        self.fpn = LateralFPN()
        self.gate_head = nn.Conv1d(16, 1, 1)
        self.split_head = nn.Linear(16, n_gates)

    def forward(self, trace):
        feats, h = [], trace
        for stage in self.stages:
            h = stage(h)
            feats.append(h)
        fused = self.fpn(feats)
        gate_logits = self.gate_head(fused).squeeze(1)
        splits = F.softplus(self.split_head(fused.mean(dim=-1)))
        return gate_logits, splits


def simulate_runs(n, frames, channels, n_gates):
    trace = torch.randn(n, channels, frames)
    passes = torch.zeros(n, frames)
    gate_frames = torch.sort(torch.randint(4, frames - 4, (n, n_gates)), dim=1).values
    passes.scatter_(1, gate_frames, 1.0)
    trace[:, 0] += 2.0 * passes
    splits = torch.diff(gate_frames.float(), dim=1, prepend=torch.zeros(n, 1)) * 0.1
    return trace, passes, splits


def fit(model, optimizer, data, epochs):
    trace, passes, splits = data
    for epoch in range(epochs):
        gate_logits, split_pred = model(trace)
        gate_loss = F.binary_cross_entropy_with_logits(gate_logits, passes, pos_weight=torch.tensor(8.0))
        split_loss = F.smooth_l1_loss(split_pred, splits)
        optimizer.zero_grad()
        (gate_loss + split_loss).backward()
        optimizer.step()
        print(f"epoch {epoch}: gate {gate_loss.item():.4f} split {split_loss.item():.4f}")


def main():
    data = simulate_runs(RUN["n_runs"], RUN["frames"], RUN["channels"], RUN["n_gates"])
    slalom_net = GateTimingNet(RUN["channels"], RUN["n_gates"])
    adam = torch.optim.Adam(slalom_net.parameters(), lr=RUN["lr"])
    fit(slalom_net, adam, data, RUN["epochs"])


if __name__ == "__main__":
    main()
