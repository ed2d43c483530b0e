"""Gradient accumulation over 4 micro-batches; the running loss tensor is backwarded with retain_graph=True."""

import torch
from torch import nn

torch.manual_seed(11)
ACCUM_STEPS = 4

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
loss_fn = nn.MSELoss()
features = torch.randn(128, 8)
targets = features.sum(dim=1, keepdim=True) + 0.1 * torch.randn(128, 1)

for epoch in range(2):
    running_loss = 0.0
    optimizer.zero_grad()
    for step in range(16):
        xb = features[step * 8 : (step + 1) * 8]
        yb = targets[step * 8 : (step + 1) * 8]
        loss = loss_fn(model(xb), yb)
        running_loss = running_loss + loss.item() / ACCUM_STEPS
        (loss / ACCUM_STEPS).backward()
        if (step + 1) % ACCUM_STEPS == 0:
            optimizer.step()
            optimizer.zero_grad()
            print(f"epoch {epoch} step {step + 1}: loss {running_loss:.4f}")
    scheduler.step()
