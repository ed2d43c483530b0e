"""A prototype classifier for bird calls that redraws the prototypes no sample has picked, from inside its own
forward, every second call; each step scores two augmented views with the same model before one backward."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(9)


class PrototypeHead(nn.Module):
    def __init__(self, dim: int, count: int, every: int = 2) -> None:
        super().__init__()
        self.protos = nn.Parameter(torch.randn(count, dim) * 0.5)
        self.register_buffer("hits", torch.zeros(count))
        self.every = every
        self.calls = 0

    @torch.no_grad()
    def revive(self) -> None:
        idle = (self.hits == 0).nonzero().squeeze(1)
        self.protos[idle] = 0.5 * torch.randn(idle.numel(), self.protos.shape[1])
        self.hits.zero_()

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls % self.every == 0:
            self.revive()
        scores = feats @ self.protos.T
        self.hits += F.one_hot(scores.argmax(1), self.protos.shape[0]).sum(0).float()
        return scores


class CallNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(20, 8), nn.Tanh())
        self.head = PrototypeHead(8, 5)

    def forward(self, x):
        return self.head(self.enc(x))


net = CallNet()
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for step in range(4):
    calls, species = torch.randn(6, 20), torch.randint(0, 5, (6,))
    view_a, view_b = calls + 0.1 * torch.randn(6, 20), calls * 0.9
    loss = F.cross_entropy(net(view_a), species) + F.cross_entropy(net(view_b), species)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 5))
