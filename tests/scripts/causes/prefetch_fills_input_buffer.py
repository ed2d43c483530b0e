"""Spectrogram tagging with a pinned input buffer: a loader fills one preallocated tensor with the next batch and
returns its tags; the loop prefetches the next batch before the backward to overlap loading with compute."""

import torch
import torch.nn as nn

torch.manual_seed(8)


class Loader:
    def __init__(self, batch: int, bins: int) -> None:
        self.batch, self.bins = batch, bins

    def load_into(self, dst):
        frames = torch.randn(self.batch, self.bins)
        tags = (frames[:, :4].sum(1) > 0).float()
        dst.copy_(frames)
        return tags


def train(tagger, opt, loader, steps):
    pinned = torch.empty(16, 20)
    tags = loader.load_into(pinned)
    for step in range(steps):
        scores = tagger(pinned).squeeze(1)
        tag_loss = nn.functional.binary_cross_entropy_with_logits(scores, tags)
        upcoming = loader.load_into(pinned)
        opt.zero_grad()
        tag_loss.backward()
        opt.step()
        tags = upcoming
        print(f"{tag_loss.item():.4f}")


tagger = nn.Sequential(nn.Linear(20, 32), nn.Tanh(), nn.Linear(32, 1))
train(tagger, torch.optim.SGD(tagger.parameters(), lr=0.1), Loader(16, 20), 3)
