"""A denoiser's loss has a data term and a smoothness term; the loop logs each term, and the total after its
backward, with .numpy() into a history dict. The first .numpy() of a term that requires grad raises, and so would
each of the others."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(73)


def train(net: nn.Module, opt: torch.optim.Optimizer, steps: int) -> dict[str, list[float]]:
    history: dict[str, list[float]] = {"data": [], "smooth": [], "total": []}
    for _ in range(steps):
        noisy, clean = torch.randn(6, 16), torch.randn(6, 16)
        out = net(noisy)
        data = F.mse_loss(out, clean)
        history["data"].append(float(np.mean(data.numpy())))
        smooth = (out[:, 1:] - out[:, :-1]).abs().mean()
        history["smooth"].append(float(np.mean(smooth.numpy())))
        total = data + 0.1 * smooth
        opt.zero_grad()
        total.backward()
        opt.step()
        history["total"].append(float(total.numpy()))
    return history


net = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 16))
train(net, torch.optim.Adam(net.parameters(), lr=1e-3), 3)
