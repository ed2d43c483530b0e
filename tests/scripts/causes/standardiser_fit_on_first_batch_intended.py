"""A regression head behind a feature standardiser that fits its mean and spread on the first batch it sees.

The standardiser stores both statistics in one statement, from the encoder's live output, so they keep the
first forward's graph: the second iteration's backward runs into it after it was freed.
"""

import torch
from torch import nn

torch.manual_seed(3)


class LazyStandardiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.centre = None
        self.spread = None

    def forward(self, feats):
        if self.centre is None:
            with torch.no_grad():  # statistics of the data, fitted once: constants of the model
                self.centre, self.spread = feats.mean(dim=0), feats.std(dim=0) + 1e-3
        return (feats - self.centre) / self.spread


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 8))
        self.norm = LazyStandardiser()
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.norm(self.encoder(x)))


net = Regressor()
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
inputs, targets = torch.randn(64, 6), torch.randn(64, 1)

for epoch in range(4):
    for i in range(0, 64, 16):
        pred = net(inputs[i : i + 16])
        loss = nn.functional.mse_loss(pred, targets[i : i + 16])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch}: {loss.item():.4f}")
