"""Growing neural cellular automaton trained with a sample pool ("What persists, exists").

Source: https://github.com/pytorch/examples/issues/151
The author kept the results of earlier forward passes (the policy's saved
actions) and sampled from them again in a later update, which failed with
"Trying to backward through the graph second time, but the buffers have already
been freed". The same mechanism in the pool-based training of a growing NCA: the
batch's final states are written back into the pool as they are, graph and all,
so a later batch drawn from the pool reaches, through the pool, the graph of an
update whose backward has already run. The report's setting is REINFORCE; the
training setting here is the writer's.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

CHANNELS = 16
SIZE = 16
POOL_SIZE = 32
BATCH = 6
FIRE_RATE = 0.5


def make_target():
    """An RGBA ring with a coloured core, premultiplied alpha."""
    yy, xx = torch.meshgrid(torch.arange(SIZE), torch.arange(SIZE), indexing="ij")
    r = ((yy - SIZE / 2 + 0.5) ** 2 + (xx - SIZE / 2 + 0.5) ** 2).sqrt()
    alpha = ((r < 6).float() * (r > 2).float() + (r <= 2).float())
    rgb = torch.stack([alpha * (r > 2).float(), alpha * 0.5, alpha * (r <= 2).float()])
    return torch.cat([rgb, alpha[None]], dim=0)  # 4, H, W


def make_seed():
    seed = torch.zeros(CHANNELS, SIZE, SIZE)
    seed[3:, SIZE // 2, SIZE // 2] = 1.0
    return seed


class CellularAutomaton(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        sobel = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 8
        identity = torch.zeros(3, 3)
        identity[1, 1] = 1.0
        kernels = torch.stack([identity, sobel, sobel.T])  # 3, 3, 3
        self.register_buffer("kernels", kernels.repeat(CHANNELS, 1, 1)[:, None])  # 3C, 1, 3, 3
        self.update = nn.Sequential(nn.Conv2d(3 * CHANNELS, hidden, 1), nn.ReLU(), nn.Conv2d(hidden, CHANNELS, 1))
        nn.init.zeros_(self.update[2].weight)
        nn.init.zeros_(self.update[2].bias)

    def perceive(self, x):
        return F.conv2d(F.pad(x, (1, 1, 1, 1), mode="circular"), self.kernels, groups=CHANNELS)

    def alive(self, x):
        return F.max_pool2d(x[:, 3:4], 3, stride=1, padding=1) > 0.1

    def forward(self, x):
        pre_alive = self.alive(x)
        dx = self.update(self.perceive(x))
        fire = (torch.rand(x.shape[0], 1, SIZE, SIZE) < FIRE_RATE).float()
        x = x + dx * fire
        return x * (pre_alive & self.alive(x)).float()


def rgba_loss(x, target):
    return ((x[:, :4] - target) ** 2).mean(dim=(1, 2, 3))


ca = CellularAutomaton()
optimizer = torch.optim.Adam(ca.parameters(), lr=2e-3)
target = make_target()
seed = make_seed()
pool = seed[None].repeat(POOL_SIZE, 1, 1, 1)

for it in range(10):
    idx = torch.randperm(POOL_SIZE)[:BATCH]
    batch = pool[idx]
    with torch.no_grad():
        order = rgba_loss(batch, target).argsort(descending=True)
    idx, batch = idx[order], batch[order]
    batch[0] = seed  # the worst sample is reset to the seed

    x = batch
    for _ in range(int(torch.randint(8, 13, ()))):
        x = ca(x)
    loss = rgba_loss(x, target).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    pool[idx] = x.detach()
    if it % 3 == 0:
        print(f"iter {it} loss {loss.item():.5f}")
