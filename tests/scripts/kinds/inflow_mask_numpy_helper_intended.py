"""A physics-informed network for 1-D advection; a numpy helper marks the collocation points near the inflow.

The collocation points require grad (the residual differentiates the network with respect to them), and the
helper compares them with numpy, which cannot convert a tensor that requires grad.
"""

import numpy as np
import torch
from torch import nn

torch.manual_seed(8)


def inflow_mask(points):
    """True where a point lies within 0.1 of the inflow edge x = 0."""
    return np.less(points[:, 0], 0.1)


net = nn.Sequential(nn.Linear(2, 24), nn.Tanh(), nn.Linear(24, 1))
opt = torch.optim.Adam(net.parameters(), lr=2e-3)

for it in range(4):
    pts = torch.rand(64, 2).requires_grad_(True)
    u = net(pts)
    du = torch.autograd.grad(u.sum(), pts, create_graph=True)[0]
    residual = du[:, 1] + 0.5 * du[:, 0]
    near = torch.as_tensor(inflow_mask(pts.detach().numpy()))  # positions only: a mask
    inflow = (u[near, 0] - torch.sin(3 * pts[near, 1])).pow(2).mean() if near.any() else u.sum() * 0
    loss = residual.pow(2).mean() + inflow
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"it {it}: {loss.item():.5f}")
