"""Node regression with a smoothness penalty: a helper multiplies the predictions by a numpy graph Laplacian and
turns the product back into a tensor, which the penalty then weighs against the predictions themselves."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
rng = np.random.default_rng(0)
NODES, FEATS = 12, 5

adj = (rng.random((NODES, NODES)) < 0.3).astype(np.float64)
adj = np.triu(adj, 1)
adj = adj + adj.T
laplacian = np.diag(adj.sum(1)) - adj


def smoothness(pred, lap):
    flat = pred.reshape(-1)
    lap_pred = torch.as_tensor(np.matmul(lap, flat.detach()), dtype=torch.float32)
    return (flat * lap_pred).mean()


net = nn.Sequential(nn.Linear(FEATS, 16), nn.Tanh(), nn.Linear(16, 1))
optim = torch.optim.SGD(net.parameters(), lr=0.05)
x, y = torch.randn(NODES, FEATS), torch.randn(NODES, 1)
for epoch in range(4):
    pred = net(x)
    total = F.mse_loss(pred, y) + 0.1 * smoothness(pred, laplacian)
    optim.zero_grad()
    total.backward()
    optim.step()
