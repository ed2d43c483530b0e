"""Remote sensing change detection: a siamese encoder over two dates and a difference decoder, fitted full-batch.

Source: https://github.com/karpathy/nn-zero-to-hero/issues/31 -- following the makemore lecture, the
author wrote the gradient-descent cells as "forward pass" (logits, probabilities, loss), "backward
pass" (``W.grad = None; loss.backward()``) and "update" (``W.data += -0.1 * W.grad``), and repeating
the backward and update without the forward failed with "Trying to backward through the graph a
second time"; each descent step needs its own forward pass. Here a practitioner fits a change
detector on the few labelled tile pairs of a new site, full-batch: the forward pass through the
siamese encoder and the decoder sits above the descent loop, and the loop recomputes only the loss.
The training setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

BANDS, C = 4, 16


class SiameseEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = nn.Sequential(nn.Conv2d(BANDS, C, 3, padding=1), nn.BatchNorm2d(C), nn.ReLU())
        self.block2 = nn.Sequential(nn.Conv2d(C, 2 * C, 3, stride=2, padding=1), nn.BatchNorm2d(2 * C), nn.ReLU())

    def forward(self, x):
        f1 = self.block1(x)
        return f1, self.block2(f1)


class DifferenceDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(2 * C, C, 2, stride=2)
        self.fuse = nn.Sequential(nn.Conv2d(2 * C, C, 3, padding=1), nn.ReLU(), nn.Conv2d(C, 1, 1))

    def forward(self, feats_a, feats_b):
        d1 = torch.abs(feats_a[0] - feats_b[0])
        d2 = torch.abs(feats_a[1] - feats_b[1])
        return self.fuse(torch.cat([d1, self.up(d2)], 1))


def make_site(n=8, size=16):
    before = torch.rand(n, BANDS, size, size)
    after = before + 0.05 * torch.randn_like(before)
    change = torch.zeros(n, 1, size, size)
    for i in range(n):
        y, x = torch.randint(0, size - 5, (2,)).tolist()
        after[i, :, y:y + 5, x:x + 5] += 0.5
        change[i, :, y:y + 5, x:x + 5] = 1
    return before, after, change


encoder, decoder = SiameseEncoder(), DifferenceDecoder()
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=1e-3)
before, after, change = make_site()
pos_weight = (1 - change).sum() / change.sum()

for it in range(5):
    # forward pass, once per descent step
    logits = decoder(encoder(before), encoder(after))
    loss = F.binary_cross_entropy_with_logits(logits, change, pos_weight=pos_weight)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"iter {it} loss {loss.item():.4f}")
