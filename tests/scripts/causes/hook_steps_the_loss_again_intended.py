"""A small training engine for a tide-gauge regressor: its step backwards and steps the loss, then runs the
after-step hooks; a gradient-accumulation hook, copied from an engine that leaves the step to its hooks, backwards
the logged loss and steps the optimizer again."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def accumulate_and_step(engine):
    logged = engine.logs["loss"]
    logged.backward()
    engine.opt.step()
    engine.opt.zero_grad()


class Engine:
    def __init__(self, model, opt, hooks):
        self.model, self.opt, self.hooks, self.logs = model, opt, hooks, {}

    def step(self, x, y):
        loss = F.mse_loss(self.model(x), y)
        self.logs["loss"] = loss
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        for hook in self.hooks:
            hook(self)
        return loss.item()


model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
engine = Engine(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), [])
for it in range(3):
    print(it, round(engine.step(torch.randn(16, 3), torch.randn(16, 1)), 4))
