"""Gated PixelCNN on binarised 8x8 glyphs: masked convolutions (type A then type B), a learned
positional bias map added after the first layer, a Bernoulli likelihood per pixel, and
autoregressive sampling at the end for a look at the samples.

Reduces https://github.com/lucidrains/rotary-embedding-torch/issues/18. In that library the
rotary module computed its frequency table in forward and kept it in ``self.cached_freqs``,
returning the cached tensor on later calls with a sequence length it had seen. The reporter's
training failed at its second ``loss.backward()`` with "Trying to backward through the graph a
second time", raised where the module read the cached frequencies: the cached table still
carried the graph of the iteration that computed it. The reporter's fix: no cache, compute the
frequencies in forward every time.

Here the author caches the positional map per image size the same way: the coordinates of an
8x8 grid never change, so the map is computed once. The training setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
SIZE, CH = 8, 16


class MaskedConv2d(nn.Conv2d):
    def __init__(self, c_in, c_out, k, mask_type):
        super().__init__(c_in, c_out, k, padding=k // 2)
        mask = torch.ones_like(self.weight)
        mask[:, :, k // 2, k // 2 + (mask_type == "B"):] = 0
        mask[:, :, k // 2 + 1:] = 0
        self.register_buffer("mask", mask)

    def forward(self, x):
        return F.conv2d(x, self.weight * self.mask, self.bias, padding=self.padding)


class PositionMap(nn.Module):
    """A learned bias for every pixel, made by an MLP from the pixel's (row, col)."""

    def __init__(self, ch):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, ch))

    def forward(self, h, w):
        rows = torch.linspace(-1, 1, h).view(h, 1).expand(h, w)
        cols = torch.linspace(-1, 1, w).view(1, w).expand(h, w)
        coords = torch.stack([rows, cols], dim=-1)
        return self.mlp(coords).permute(2, 0, 1).unsqueeze(0)  # the MLP learns: compute the map every forward


class GatedBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.conv = MaskedConv2d(ch, 2 * ch, 3, "B")
        self.out = nn.Conv2d(ch, ch, 1)

    def forward(self, x):
        a, b = self.conv(x).chunk(2, dim=1)
        return x + self.out(torch.tanh(a) * torch.sigmoid(b))


class PixelCNN(nn.Module):
    def __init__(self, ch=CH, n_blocks=2):
        super().__init__()
        self.inp = MaskedConv2d(1, ch, 5, "A")
        self.pos = PositionMap(ch)
        self.blocks = nn.ModuleList(GatedBlock(ch) for _ in range(n_blocks))
        self.head = nn.Sequential(nn.ReLU(), nn.Conv2d(ch, ch, 1), nn.ReLU(), nn.Conv2d(ch, 1, 1))

    def forward(self, x):
        h = self.inp(x) + self.pos(x.shape[2], x.shape[3])
        for block in self.blocks:
            h = block(h)
        return self.head(h)


def glyphs(n):
    """Random bars and boxes on an 8x8 canvas."""
    imgs = torch.zeros(n, 1, SIZE, SIZE)
    for i in range(n):
        r0, c0 = torch.randint(0, 4, (2,)).tolist()
        r1, c1 = r0 + torch.randint(2, 5, (1,)).item(), c0 + torch.randint(2, 5, (1,)).item()
        kind = torch.randint(3, (1,)).item()
        if kind == 0:
            imgs[i, 0, r0, c0:c1] = 1
        elif kind == 1:
            imgs[i, 0, r0:r1, c0] = 1
        else:
            imgs[i, 0, r0:r1, c0:c1] = 1
            imgs[i, 0, r0 + 1:r1 - 1, c0 + 1:c1 - 1] = 0
    return imgs


@torch.no_grad()
def sample(model, n):
    x = torch.zeros(n, 1, SIZE, SIZE)
    for r in range(SIZE):
        for c in range(SIZE):
            p = torch.sigmoid(model(x)[:, :, r, c])
            x[:, :, r, c] = torch.bernoulli(p)
    return x


data = glyphs(192)
model = PixelCNN()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)

for epoch in range(3):
    perm = torch.randperm(len(data))
    for i in range(0, len(data), 64):
        x = data[perm[i:i + 64]]
        logits = model(x)
        nll = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / len(x)
        optimizer.zero_grad()
        nll.backward()
        optimizer.step()
    print(f"epoch {epoch}: nll/image {nll.item():.2f}")

samples = sample(model, 4)
print("mean ink in samples:", samples.mean().item())
