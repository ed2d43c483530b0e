"""Credit-default scorecard network with monotonic constraints on some features.

Source: https://github.com/fastai/fastbook/pull/471 (04_mnist_basics): nudging one
entry of a trainable weight tensor in place, ``weights[0] *= 1.0001``, outside
``torch.no_grad()`` fails with "a view of a leaf Variable that requires grad is
being used in an in-place operation"; the fix there edits the values without
autograd seeing it (``weights[0].data *= 1.0001``). The author was changing a
parameter's value by hand between gradient steps. The training setting is the
writer's: an applicant-level default model whose scorecard head adds up per-feature
points; after every optimizer step the points of features that must act
monotonically (debt-to-income, past delinquencies, utilisation) are projected onto
the non-negative half-line, and the row of the head's weight is edited in place.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_FEAT = 8
MONOTONE_UP = [0, 3, 5]  # higher value must never lower the predicted risk
N_APPLICANTS = 512


def make_applicants(n):
    x = torch.randn(n, N_FEAT)
    risk = 1.2 * x[:, 0] + 0.8 * x[:, 3] + 0.6 * x[:, 5] - 0.7 * x[:, 1] + 0.3 * x[:, 2] * x[:, 4]
    y = (risk + 0.5 * torch.randn(n) > 1.4).float()  # defaults are the minority class
    return x, y


class FeatureShaper(nn.Module):
    """A small shape function per feature, like the binned points of a scorecard."""

    def __init__(self, n_feat, hidden=8):
        super().__init__()
        self.w1 = nn.Parameter(0.5 * torch.randn(n_feat, hidden))
        self.b1 = nn.Parameter(torch.zeros(n_feat, hidden))
        self.w2 = nn.Parameter(0.5 * torch.randn(n_feat, hidden))

    def forward(self, x):
        h = torch.tanh(x.unsqueeze(-1) * self.w1 + self.b1)
        return x + (h * self.w2).sum(-1)  # (n, n_feat): identity plus a learned bend


class CreditScorecard(nn.Module):
    def __init__(self, n_feat):
        super().__init__()
        self.shaper = FeatureShaper(n_feat)
        self.scorecard = nn.Linear(n_feat, 1)

    def forward(self, x):
        return self.scorecard(self.shaper(x)).squeeze(-1)


def project_monotone(scorecard, idx):
    """Points of the monotone-increasing features may not be negative."""
    with torch.no_grad():  # a projection of the values, not part of the graph
        row = scorecard.weight[0]  # the points per feature
        row[idx] = row[idx].clamp(min=0.0)


x_all, y_all = make_applicants(N_APPLICANTS)
pos_rate = y_all.mean()
pos_weight = (1 - pos_rate) / pos_rate  # class weight for the rare defaults

model = CreditScorecard(N_FEAT)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
mono = torch.tensor(MONOTONE_UP)

for epoch in range(3):
    perm = torch.randperm(N_APPLICANTS)
    for start in range(0, N_APPLICANTS, 128):
        idx = perm[start:start + 128]
        logits = model(x_all[idx])
        loss = F.binary_cross_entropy_with_logits(logits, y_all[idx], pos_weight=pos_weight)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        project_monotone(model.scorecard, mono)
    print(f"epoch {epoch}: loss {loss.item():.4f}")
