"""A regressor of a smooth field, validated on the slope of its output: the validation step turns grad on to
differentiate, inside the loop's evaluation context, which is inference mode."""

import torch
from torch import nn

torch.manual_seed(6)
field = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(field.parameters(), lr=1e-2)


def slope_error(xs):
    with torch.enable_grad():
        xs = xs.clone().requires_grad_(True)
        ys = field(xs)
        (dy,) = torch.autograd.grad(ys.sum(), xs)
    return (dy - torch.cos(xs)).abs().mean().item()


def run(epochs, fast_eval=True):
    for epoch in range(epochs):
        xs = torch.rand(32, 1) * 6
        mse = ((field(xs) - torch.sin(xs)) ** 2).mean()
        opt.zero_grad()
        mse.backward()
        opt.step()
        guard = torch.inference_mode() if fast_eval else torch.no_grad()
        with guard:
            err = slope_error(torch.linspace(0, 6, 20).unsqueeze(1))
        print(epoch, round(err, 4))


run(3)
