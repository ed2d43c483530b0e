"""A refinement network trained stage by stage in one step: each stage's loss is backwarded inside an inner loop,
the final loss after it, then one step. The stages' output is carried from one stage to the next, so the second
stage's backward goes through the first stage's freed graph."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Refiner(nn.Module):
    def __init__(self, width=8, stages=3):
        super().__init__()
        self.stem = nn.Linear(4, width)
        self.stages = nn.ModuleList(nn.Linear(width, width) for _ in range(stages))
        self.out = nn.Linear(width, 1)


class StageTrainer:
    def __init__(self, model):
        self.model = model
        self.probe = nn.ModuleList(nn.Linear(8, 1) for _ in model.stages)
        self.opt = torch.optim.SGD(list(model.parameters()) + list(self.probe.parameters()), lr=0.05)

    def train_step(self, x, y):
        self.opt.zero_grad()
        h = torch.tanh(self.model.stem(x))
        for k, stage in enumerate(self.model.stages):
            h = torch.tanh(stage(h))
            stage_loss = F.mse_loss(self.probe[k](h), y)
            stage_loss.backward()
        final_loss = F.mse_loss(self.model.out(h), y)
        final_loss.backward()
        self.opt.step()
        return final_loss.item()


model = Refiner()
trainer = StageTrainer(model)
for it in range(3):
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    print(f"{it} {trainer.train_step(x, y):.4f}")
