"""Two nets kept on a plain object: the big one is stepped before the small one's loss, built on its output."""

import torch
import torch.nn.functional as F
from torch import nn


class Nets:
    def __init__(self):
        self.big = nn.Sequential(nn.Linear(7, 24), nn.GELU(), nn.Linear(24, 4))
        self.small = nn.Linear(7, 4)


torch.manual_seed(9)
nets = Nets()
opt_big = torch.optim.SGD(nets.big.parameters(), lr=0.1)
opt_small = torch.optim.Adam(nets.small.parameters(), lr=1e-3)
batches = [(torch.randn(10, 7), torch.randint(0, 4, (10,))) for _ in range(3)]
for x, y in batches:
    big_out = nets.big(x)
    small_out = nets.small(x)
    big_loss = F.cross_entropy(big_out, y)
    opt_big.zero_grad()
    big_loss.backward(retain_graph=True)
    opt_big.step()
    small_loss = F.mse_loss(small_out.softmax(-1), big_out.softmax(-1))
    opt_small.zero_grad()
    small_loss.backward()
    opt_small.step()
