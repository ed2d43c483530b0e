"""Multi-task regression: a shared trunk and one head per task; each task's loss is backwarded in turn, and the
optimizer steps once per batch on the accumulated gradients."""

import torch
from torch import nn

torch.manual_seed(5)


class Trunk(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 16), nn.GELU(), nn.Linear(16, 16))

    def forward(self, x):
        return self.body(x)


trunk = Trunk()
heads = nn.ModuleDict({"depth": nn.Linear(16, 1), "normal": nn.Linear(16, 3)})
opt = torch.optim.Adam([*trunk.parameters(), *heads.parameters()], lr=1e-3)
x = torch.randn(24, 10)
targets = {"depth": torch.randn(24, 1), "normal": torch.randn(24, 3)}

for it in range(3):
    shared = trunk(x)
    per_task = {k: ((head(shared) - targets[k]) ** 2).mean() for k, head in heads.items()}
    opt.zero_grad()
    for k, task_loss in per_task.items():
        task_loss.backward(retain_graph=True)
    opt.step()
