"""An audio-level normaliser with a running gain: the buffers move under no_grad, the forward reads a copy."""

import torch
import torch.nn as nn

torch.manual_seed(6)


class RunningGain(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.register_buffer("gain", torch.ones(channels))
        self.register_buffer("centre", torch.zeros(channels))

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        out = (frames - self.centre) * self.gain.clone()
        if self.training:
            with torch.no_grad():
                self.centre.lerp_(frames.mean(0), 0.05)
                self.gain.mul_(0.95).add_(0.05 / (frames.std(0) + 1e-3))
        return out


class KeywordSpotter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.front = nn.Linear(10, 6)
        self.norm = RunningGain(6)
        self.back = nn.Linear(6, 3)

    def forward(self, x):
        return self.back(torch.relu(self.norm(self.front(x))))


spotter = KeywordSpotter()
adam = torch.optim.Adam(spotter.parameters(), lr=1e-2)
for batch in range(3):
    clips, words = torch.randn(8, 10), torch.randint(0, 3, (8,))
    ce = nn.functional.cross_entropy(spotter(clips), words)
    adam.zero_grad()
    ce.backward()
    adam.step()
print(round(ce.item(), 5))
