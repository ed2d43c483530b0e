"""Coarse-to-fine depth: a refiner reads the image and the last depth estimate and predicts the next estimate
outright; every refinement's loss is backwarded as it goes, one step per batch."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

refiner = nn.Sequential(nn.Linear(12 + 12, 48), nn.ReLU(), nn.Linear(48, 12))
coarse = nn.Linear(12, 12)
coarse.requires_grad_(False)
opt = torch.optim.Adam(refiner.parameters(), lr=2e-3)

for batch in range(3):
    image, depth_gt = torch.randn(6, 12), torch.rand(6, 12)
    with torch.no_grad():
        depth = coarse(image)
    opt.zero_grad()
    for it in range(3):
        logits = refiner(torch.cat([image, depth], dim=1))
        depth = F.softplus(logits)
        refine_loss = F.mse_loss(depth, depth_gt)
        refine_loss.backward()
    opt.step()
