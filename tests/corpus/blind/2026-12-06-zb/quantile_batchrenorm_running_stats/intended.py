"""Quantile regression on tabular data: an MLP with hand-written Batch Renormalization and
non-crossing quantile heads, trained with the pinball loss.

Report: https://github.com/ShusenTang/Dive-into-DL-PyTorch/issues/129 (the book's batch
normalisation written from scratch: the moving mean and variance are updated from the batch
statistics, which carry the graph of the current forward, and are kept on the module; once a
forward reads them the backward reaches the previous batch's freed graph, "Trying to backward
through the graph a second time" in the second epoch). The training setting is the writer's.

What the author was doing: small tabular batches, so batch norm is replaced by Batch
Renormalization (Ioffe 2017), written by hand: the training forward normalises with the batch
statistics corrected by r = sigma_B / sigma and d = (mu_B - mu) / sigma, taken from the
running statistics, and then updates the running statistics from the batch. Three quantile
heads are kept from crossing by predicting the lowest quantile and softplus increments.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N, D, BATCH = 512, 6, 32
TAUS = torch.tensor([0.1, 0.5, 0.9])
EPOCHS = 2


class BatchRenorm1d(nn.Module):
    def __init__(self, num_features, momentum=0.05, eps=1e-5, r_max=3.0, d_max=5.0):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.running_mean = torch.zeros(num_features)
        self.running_std = torch.ones(num_features)
        self.momentum, self.eps, self.r_max, self.d_max = momentum, eps, r_max, d_max

    def forward(self, x):
        if self.training:
            mean = x.mean(0)
            std = (x.var(0, unbiased=False) + self.eps).sqrt()
            # r and d are constants for the gradient (stop_gradient in the paper)
            r = (std.detach() / self.running_std).clamp(1.0 / self.r_max, self.r_max)
            d = ((mean.detach() - self.running_mean) / self.running_std).clamp(-self.d_max, self.d_max)
            x_hat = (x - mean) / std * r + d
            with torch.no_grad():
                self.running_mean = self.running_mean + self.momentum * (mean - self.running_mean)
                self.running_std = self.running_std + self.momentum * (std - self.running_std)
        else:
            x_hat = (x - self.running_mean) / self.running_std
        return self.weight * x_hat + self.bias


class QuantileMLP(nn.Module):
    def __init__(self, d_in, hidden=32, n_q=3):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(d_in, hidden), BatchRenorm1d(hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), BatchRenorm1d(hidden), nn.ReLU(),
        )
        self.base = nn.Linear(hidden, 1)
        self.delta = nn.Linear(hidden, n_q - 1)

    def forward(self, x):
        h = self.body(x)
        low = self.base(h)
        steps = F.softplus(self.delta(h))
        return torch.cat([low, low + torch.cumsum(steps, dim=1)], dim=1)  # non-crossing


def pinball(pred, y, taus):
    diff = y.unsqueeze(1) - pred
    return torch.maximum(taus * diff, (taus - 1) * diff).mean()


x = torch.randn(N, D)
noise = torch.randn(N) * (0.3 + 0.5 * x[:, 1].abs())
y = x[:, 0] * 2.0 - x[:, 2] + noise

model = QuantileMLP(D)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(EPOCHS):
    model.train()
    perm = torch.randperm(N)
    for i in range(0, N, BATCH):
        idx = perm[i:i + BATCH]
        pred = model(x[idx])
        loss = pinball(pred, y[idx], TAUS)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        q = model(x)
        cover = ((y >= q[:, 0]) & (y <= q[:, 2])).float().mean()
    print(f"epoch {epoch}: pinball {loss.item():.4f} 80% interval coverage {cover.item():.3f}")
