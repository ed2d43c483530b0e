"""Two regressors share one Lagrange multiplier on a constraint; each regressor's loss has its penalty
term, and the multiplier is trained by the dual loss, built from both penalties."""

import torch
from torch import nn

torch.manual_seed(2)


def make_head():
    return nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1))


def train(epochs=3):
    left, right = make_head(), make_head()
    raw_mult = torch.zeros((), requires_grad=True)
    opt_l = torch.optim.SGD(left.parameters(), lr=0.05)
    opt_r = torch.optim.SGD(right.parameters(), lr=0.05)
    opt_m = torch.optim.SGD([raw_mult], lr=0.1)
    xs, ys = torch.randn(32, 3), torch.randn(32, 1)
    for epoch in range(epochs):
        mult = nn.functional.softplus(raw_mult)
        out_l, out_r = left(xs), right(xs)
        slack_l = out_l.abs().mean() - 0.3
        slack_r = out_r.abs().mean() - 0.3
        fit_l = nn.functional.mse_loss(out_l, ys) + mult * slack_l
        fit_r = nn.functional.mse_loss(out_r, ys) + mult * slack_r
        dual = -(mult * slack_l + mult * slack_r)

        opt_l.zero_grad()
        fit_l.backward(retain_graph=True)
        opt_l.step()
        opt_r.zero_grad()
        fit_r.backward()
        opt_r.step()
        opt_m.zero_grad()
        dual.backward()
        opt_m.step()
        print(epoch, float(fit_l), float(fit_r), float(mult))


train()
