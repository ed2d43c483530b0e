"""A denoiser whose conv layers carry full backward hooks that log gradient norms; the block builds its
activations with inplace=True to save memory, and the first forward stops at the activation."""

import torch
from torch import nn

torch.manual_seed(5)


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.LeakyReLU(0.1))


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(block(1, 6), block(6, 6))
        self.out = nn.Conv2d(6, 1, 3, padding=1)

    def forward(self, noisy):
        return noisy - self.out(self.body(noisy))


norms = {}
net = Denoiser()
for name, layer in net.named_modules():
    if isinstance(layer, nn.Conv2d):
        layer.register_full_backward_hook(lambda m, gi, go, name=name: norms.__setitem__(name, go[0].norm().item()))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
clean = torch.rand(4, 1, 8, 8)
for step in range(3):
    noisy = clean + 0.1 * torch.randn_like(clean)
    err = (net(noisy) - clean).pow(2).mean()
    opt.zero_grad()
    err.backward()
    opt.step()
    print(step, err.item(), len(norms))
