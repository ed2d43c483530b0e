"""Gesture recognition from IMU windows with a "right for the right reasons" penalty on input saliency.

Reduced from ml-research/NeSyXIL issue #3 (https://github.com/ml-research/NeSyXIL/issues/3): training
with an explanation loss (the RRR-style penalty on the model's input-gradient explanations, computed
with captum) failed at ``loss.backward()`` with "Trying to backward through the graph a second time";
the maintainers answer that captum has to be modified in one line so that the computational graph is
kept when the explanation's gradient is taken. Without it, taking the input gradient frees the forward
graph that the classification loss still needs, and the explanation carries no graph of its own. The
training setting is the writer's: a temporal CNN and GRU classify accelerometer, gyroscope and
magnetometer windows, and the saliency on the magnetometer channels (unreliable near the test rig's
motors) is penalised.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

CHANNELS, WINDOW, N_GESTURES = 9, 32, 6
MAG_CHANNELS = [6, 7, 8]


def make_windows(n):
    """Each gesture is a burst of a class-specific acceleration pattern; magnetometer holds a spurious class cue."""
    labels = torch.randint(0, N_GESTURES, (n,))
    t = torch.linspace(0, 1, WINDOW)
    freq = (1 + labels).float().unsqueeze(1)
    x = 0.3 * torch.randn(n, CHANNELS, WINDOW)
    x[:, 0] += torch.sin(2 * torch.pi * freq * t)
    x[:, 4] += torch.cos(2 * torch.pi * freq * t) * 0.5
    x[:, 7] += 0.8 * labels.float().unsqueeze(1) / N_GESTURES  # shortcut the model should not use
    return x, labels


class TemporalConvGRU(nn.Module):
    def __init__(self, hidden=24):
        super().__init__()
        self.convs = nn.Sequential(
            nn.Conv1d(CHANNELS, 16, 5, padding=2), nn.GELU(),
            nn.Conv1d(16, 16, 5, padding=4, dilation=2), nn.GELU(),
        )
        self.gru = nn.GRU(16, hidden, batch_first=True)
        self.head = nn.Linear(hidden, N_GESTURES)

    def forward(self, x):
        h = self.convs(x).transpose(1, 2)
        out, _ = self.gru(h)
        return self.head(out.mean(1))


def input_saliency(log_probs, windows):
    """Gradient of the summed log-probabilities w.r.t. the input window (RRR explanation)."""
    return torch.autograd.grad(log_probs.sum(), windows)[0]


windows, labels = make_windows(96)
model = TemporalConvGRU()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
rrr_weight = 10.0

for epoch in range(2):
    perm = torch.randperm(len(labels))
    for start in range(0, len(perm), 32):
        idx = perm[start:start + 32]
        x = windows[idx].clone().requires_grad_(True)
        logits = model(x)
        log_probs = F.log_softmax(logits, -1)
        ce = F.nll_loss(log_probs, labels[idx])
        saliency = input_saliency(log_probs, x)
        rrr = saliency[:, MAG_CHANNELS].pow(2).sum(dim=(1, 2)).mean()
        loss = ce + rrr_weight * rrr
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: ce {ce.item():.4f}, magnetometer saliency {rrr.item():.5f}")
