"""One module holds a painter, a reader that decodes the painter's canvas, and a judge; the painter and the
reader have optimizers of their own, and the loop steps the painter before the reader's loss goes backward."""

import torch
import torch.nn.functional as F
from torch import nn


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.painter = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 8))
        self.reader = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
        self.judge = nn.Linear(8, 1)

    def forward(self, z):
        canvas = self.painter(z)
        return canvas, self.reader(canvas.detach())


torch.manual_seed(17)
pair = Pair()
paint_opt = torch.optim.Adam(pair.painter.parameters(), lr=1e-3)
read_opt = torch.optim.Adam(pair.reader.parameters(), lr=1e-3)
for it in range(4):
    z = torch.randn(16, 4)
    canvas, guess = pair(z)
    paint_loss = -pair.judge(canvas).mean()
    paint_opt.zero_grad()
    paint_loss.backward()
    paint_opt.step()
    read_loss = F.mse_loss(guess, z)
    read_opt.zero_grad()
    read_loss.backward()
    read_opt.step()
    print(f"{it}: {paint_loss.item():.4f} {read_loss.item():.4f}")
