"""Conveyor-belt idler bearing wear from vibration spectrogram frames.

Source: https://github.com/pytorch/pytorch/issues/104862
The report's network ended in an nn.LogSoftmax followed by an nn.ReLU(inplace=True);
training failed at backward with "one of the variables needed for gradient
computation has been modified by an inplace operation ... output 0 of
LogSoftmaxBackward0". Reduced here to a belt-monitoring classifier whose
temporal pooling takes a log-softmax over frames and then clips the log-weights
with an in-place Hardtanh before exponentiating them, the way the report placed
an in-place activation directly after the log-softmax.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

HP = {"n_clips": 80, "n_bands": 16, "n_frames": 40, "channels": 24, "n_states": 3,
      "batch": 20, "epochs": 2, "lr": 2e-3, "min_log_weight": -6.0}


def synth_idler_clips(hp):
    g = torch.Generator().manual_seed(21)
    n, b, t = hp["n_clips"], hp["n_bands"], hp["n_frames"]
    state = torch.randint(0, hp["n_states"], (n,), generator=g)
    spec = 0.3 * torch.randn(n, b, t, generator=g)
    impulse_frames = torch.rand(n, 1, t, generator=g) < 0.1
    band_profile = torch.linspace(0.0, 1.0, b).view(1, b, 1)
    spec = spec + state.view(n, 1, 1).float() * band_profile * impulse_frames.float()
    return spec, state


class FramePool(nn.Module):
    def __init__(self, channels, min_log_weight):
        super().__init__()
        self.score = nn.Conv1d(channels, 1, kernel_size=1)
        self.log_norm = nn.LogSoftmax(dim=-1)
        self.clip = nn.Hardtanh(min_val=min_log_weight, max_val=0.0, inplace=True)

    def forward(self, h):
        log_w = self.log_norm(self.score(h))
        log_w = self.clip(log_w)
        return (h * log_w.exp()).sum(dim=-1)


class IdlerNet(nn.Module):
    def __init__(self, hp):
        super().__init__()
        c = hp["channels"]
        self.trunk = nn.Sequential(
            nn.Conv1d(hp["n_bands"], c, kernel_size=5, padding=2), nn.ReLU(),
            nn.Conv1d(c, c, kernel_size=3, padding=1), nn.ReLU(),
        )
        self.pool = FramePool(c, hp["min_log_weight"])
        self.head = nn.Linear(c, hp["n_states"])

    def forward(self, spec):
        return self.head(self.pool(self.trunk(spec)))


def train_epoch(model, optimizer, spec, state, batch):
    model.train()
    running = 0.0
    for i in range(0, spec.shape[0], batch):
        optimizer.zero_grad()
        logits = model(spec[i:i + batch])
        wear_loss = F.cross_entropy(logits, state[i:i + batch])
        wear_loss.backward()
        optimizer.step()
        running += wear_loss.item()
    return running


def main():
    torch.manual_seed(0)
    spec, state = synth_idler_clips(HP)
    model = IdlerNet(HP)
    optimizer = torch.optim.AdamW(model.parameters(), lr=HP["lr"])
    for epoch in range(HP["epochs"]):
        print(epoch, train_epoch(model, optimizer, spec, state, HP["batch"]))


if __name__ == "__main__":
    main()
