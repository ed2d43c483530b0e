"""Heteroscedastic-free regression of a pump's flow with a learned observation scale: main() turns the raw scale
into a positive one once and hands both to fit(), whose optimizer steps the raw scale every step."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def fit(net, raw_scale, scale, xs, ys, steps=3):
    opt = torch.optim.Adam([*net.parameters(), raw_scale], lr=0.05)
    for step in range(steps):
        err = ((net(xs).squeeze(-1) - ys) / scale) ** 2
        loss = 0.5 * err.mean() + torch.log(scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(step, round(loss.item(), 4))


def main():
    net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    xs = torch.randn(32, 3)
    ys = xs.sum(-1) + 0.3 * torch.randn(32)
    raw = nn.Parameter(torch.zeros(()))
    positive = F.softplus(raw) + 1e-3
    fit(net, raw, positive, xs, ys)


main()
