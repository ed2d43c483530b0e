"""A denoiser whose inputs are rescaled per channel by a small transform, one sample at a time: the training loop
iterates over the noisy batch the model's first stage produced, and the transform writes into each channel of the
sample it is given. Iterating a tensor gives views of one unbind, and each channel of the sample is again one of
several views: torch refuses the write.
"""

import torch
from torch import nn


class ChannelScale:
    def __init__(self, gains):
        self.gains = gains

    def __call__(self, sample):
        for plane, g in zip(sample, self.gains):
            plane.mul_(g)
        return sample


torch.manual_seed(8)
stage = nn.Conv2d(3, 3, 3, padding=1)
head = nn.Conv2d(3, 3, 3, padding=1)
scale = ChannelScale([0.5, 1.0, 2.0])
opt = torch.optim.Adam([*stage.parameters(), *head.parameters()], lr=1e-2)
for _ in range(3):
    clean = torch.randn(4, 3, 8, 8)
    staged = stage(clean + 0.1 * torch.randn_like(clean))
    scaled = torch.stack([scale(s) for s in staged])
    loss = (head(scaled) - clean).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(round(loss.item(), 5))
