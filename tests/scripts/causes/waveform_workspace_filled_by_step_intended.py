"""A vocoder-like decoder writes each frame it generates into a workspace its trainer allocated once, then
compares the whole waveform with the target."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(15)
FRAMES, WIDTH = 5, 4


class FrameDecoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.GRUCell(3, 8)
        self.out = nn.Linear(8, WIDTH)

    def forward(self, cond: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.cell(cond, h)
        return self.out(h), h


class WaveTrainer:
    def __init__(self, batch: int) -> None:
        self.decoder = FrameDecoder()
        self.opt = torch.optim.Adam(self.decoder.parameters(), lr=1e-3)
        self.wave = torch.zeros(batch, FRAMES * WIDTH)

    def synthesise(self, cond: torch.Tensor) -> torch.Tensor:
        """Decode FRAMES frames into the workspace."""
        wave = torch.zeros(cond.shape[0], FRAMES * WIDTH)
        h = torch.zeros(cond.shape[0], 8)
        for k in range(FRAMES):
            frame, h = self.decoder(cond, h)
            wave[:, k * WIDTH : (k + 1) * WIDTH] = frame
        return wave

    def fit(self, cond: torch.Tensor, target: torch.Tensor) -> float:
        self.opt.zero_grad()
        recon = F.l1_loss(self.synthesise(cond), target)
        recon.backward()
        self.opt.step()
        return recon.item()


trainer = WaveTrainer(batch=6)
for _ in range(3):
    trainer.fit(torch.randn(6, 3), torch.randn(6, FRAMES * WIDTH))
