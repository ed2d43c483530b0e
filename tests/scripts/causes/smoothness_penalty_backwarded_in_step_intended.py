"""A density model whose step method backwards a smoothness penalty on its own prediction before handing the data
loss back to the trainer, which backwards that loss and steps: the penalty's backward freed the prediction's graph,
which the data loss shares."""

import torch
from torch import nn

torch.manual_seed(0)


class Density(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 16), nn.Softplus(), nn.Linear(16, 1))

    def step_loss(self, points, target):
        value = self.body(points).squeeze(-1)
        smooth = (value[1:] - value[:-1]).pow(2).mean()
        smooth.backward(retain_graph=True)
        return (value - target).pow(2).mean()


def train(model, opt, rounds=3):
    for _ in range(rounds):
        points = torch.randn(12, 2)
        target = points.norm(dim=1)
        opt.zero_grad()
        data_loss = model.step_loss(points, target)
        data_loss.backward()
        opt.step()


model = Density()
train(model, torch.optim.SGD(model.parameters(), lr=0.05))
