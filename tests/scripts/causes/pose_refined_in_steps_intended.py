"""Iterative pose refinement: a refiner predicts a correction from the image features and the current pose
estimate; each refinement step has its own loss, backwarded as it goes; one optimizer step per batch."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

backbone = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
refiner = nn.Sequential(nn.Linear(32 + 6, 32), nn.ReLU(), nn.Linear(32, 6))
adam = torch.optim.Adam([*backbone.parameters(), *refiner.parameters()], lr=1e-3)

for batch in range(3):
    image, true_pose = torch.randn(8, 16), torch.randn(8, 6)
    adam.zero_grad()
    pose = torch.zeros(8, 6)
    for stage in range(3):
        features = backbone(image)
        correction = refiner(torch.cat([features, pose], dim=1))
        pose = pose + correction
        stage_loss = F.l1_loss(pose, true_pose)
        stage_loss.backward()
        pose = pose.detach()
    adam.step()
