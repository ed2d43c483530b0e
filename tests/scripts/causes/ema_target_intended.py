import copy

import torch
from torch import nn

torch.manual_seed(3)
online = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 6))
target = copy.deepcopy(online)
opt = torch.optim.Adam(online.parameters(), lr=1e-3)

for it in range(4):
    x = torch.randn(8, 6)
    view_a, view_b = x + 0.05 * torch.randn_like(x), 0.9 * x
    with torch.no_grad():
        z_t = target(view_b)
    z_o = online(view_a)
    with torch.no_grad():
        for p_t, p_o in zip(target.parameters(), online.parameters()):
            p_t.lerp_(p_o, 0.01)
    loss = (z_o - z_t).pow(2).sum(1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
