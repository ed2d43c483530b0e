import torch
from torch import nn


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(5, 6)
        self.a = nn.Linear(6, 1)
        self.b = nn.Linear(6, 1)

    def forward(self, x):
        h = torch.relu(self.body(x))
        return self.a(h), self.b(h)


def train(model, opt, x, ya, yb, steps):
    weights = torch.tensor([0.7, 0.3])
    for _ in range(steps):
        opt.zero_grad()
        pa, pb = model(x)
        la = (pa - ya).pow(2).mean()
        lb = (pb - yb).abs().mean()
        losses = torch.stack([la, lb])
        total = (weights * losses).sum()
        total.backward()
        opt.step()


torch.manual_seed(5)
model = TwoHeads()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x, ya, yb = torch.randn(16, 5), torch.randn(16, 1), torch.randn(16, 1)
train(model, opt, x, ya, yb, steps=3)
