"""The window's chunks accumulate their gradients, and the step runs where the window ends."""

import torch
from torch import nn


class Forecaster(nn.Module):
    def __init__(self, hidden=12):
        super().__init__()
        self.cell = nn.GRUCell(1, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, xs, h):
        preds = []
        for x in xs:
            h = self.cell(x, h)
            preds.append(self.out(h))
        return torch.stack(preds), h


def fit(model, series, chunk=5, window=3):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    h = torch.zeros(1, 12)
    chunks = series.split(chunk + 1)
    for t, part in enumerate(chunks):
        pred, h = model(part[:-1].unsqueeze(-1), h)
        loss = (pred.squeeze(-1) - part[1:]).pow(2).mean()
        release = t % window == window - 1
        loss.backward(retain_graph=not release)
        if release:
            opt.step()
            opt.zero_grad()
            h.detach_()


torch.manual_seed(2)
series = torch.sin(torch.linspace(0, 12, 72)).unsqueeze(-1) + 0.05 * torch.randn(72, 1)
fit(Forecaster(), series)
