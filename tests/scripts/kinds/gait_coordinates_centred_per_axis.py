"""Gait phase from a wearable's foot positions: the trajectory is split into its two axes with ``unbind``, and each
axis is centred on the stride's mean and scaled by the stride length in place, axis by axis."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def normalise(track):
    fwd, side = track.unbind(-1)
    start_f, start_s = fwd.mean(1, keepdim=True), side.mean(1, keepdim=True)
    stride = (fwd.amax(1, keepdim=True) - fwd.amin(1, keepdim=True)).clamp_min(1e-2)
    fwd -= start_f
    side -= start_s
    fwd /= stride
    side /= stride
    return torch.stack([fwd, side], dim=-1)


encoder = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
head = nn.Linear(20, 4)
opt = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.05)
for it in range(3):
    raw = torch.randn(8, 10, 2)
    phase = torch.randint(0, 4, (8,))
    track = encoder(raw)
    logits = head(normalise(track).flatten(1))
    loss = F.cross_entropy(logits, phase)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(it, round(loss.item(), 4))
