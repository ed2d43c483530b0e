"""Per-frame class scores masked frame by frame: a loop over the frames that unbind() makes writes the masked
entries of each frame in place, then the scores are averaged over frames."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
CLASSES, FRAMES = 5, 4


class FrameScorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, CLASSES)

    def forward(self, clips, banned):
        scores = self.proj(clips).transpose(1, 2)  # (batch, classes, frames)
        for frame in scores.unbind(dim=2):
            frame[:, banned] = -30.0
        return scores.mean(2)


scorer = FrameScorer()
opt = torch.optim.SGD(scorer.parameters(), lr=0.1)
for _ in range(3):
    clips, labels = torch.randn(8, FRAMES, 6), torch.randint(0, CLASSES - 1, (8,))
    loss = F.cross_entropy(scorer(clips, CLASSES - 1), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
