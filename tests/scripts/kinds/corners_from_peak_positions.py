"""Corner detection on synthetic squares: a small convolutional network predicts one heatmap per corner, and the
training loop decodes each heatmap's peak with ``argmax`` and compares the positions with the true corners. The
positions are integers: the loss has no graph. The network's layers are built in its constructor (torch
initialises them under no_grad), which is no cut of the loss.
"""

import torch
import torch.nn.functional as F
from torch import nn


class CornerNet(nn.Module):
    def __init__(self, corners=4):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU())
        self.heads = nn.Conv2d(8, corners, 1)

    def forward(self, img):
        return self.heads(self.body(img))


def peaks(maps):
    _, _, _, w = maps.shape
    flat = maps.flatten(2).argmax(dim=-1)
    return torch.stack([(flat % w).float(), (flat // w).float()], dim=-1)


torch.manual_seed(4)
net = CornerNet()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
images, corners = torch.rand(6, 1, 16, 16), torch.randint(0, 16, (6, 4, 2)).float()
for step in range(3):
    guess = peaks(net(images))
    err = F.smooth_l1_loss(guess, corners)
    opt.zero_grad()
    err.backward()
    opt.step()
