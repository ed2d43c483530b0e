"""A one-step look-ahead in the Meta-Weight-Net style: a weighting network turns per-example losses into weights,
the model takes a virtual step with torch.autograd.grad over all its parameters, and a clean batch's loss on the
stepped copy trains the weighting network. The model holds an auxiliary head its forward never calls."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

torch.manual_seed(0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(5, 8)
        self.out = nn.Linear(8, 1)
        self.aux = nn.Linear(8, 2)

    def forward(self, x):
        return self.out(torch.relu(self.body(x)))


model = Model()
weigher = nn.Sequential(nn.Linear(1, 8), nn.ReLU(), nn.Linear(8, 1), nn.Sigmoid())
opt_weigher = torch.optim.Adam(weigher.parameters(), lr=1e-3)
for it in range(3):
    x, y = torch.randn(16, 5), torch.randn(16, 1)
    clean_x, clean_y = torch.randn(8, 5), torch.randn(8, 1)
    per_example = F.mse_loss(model(x), y, reduction="none")
    weighted = (weigher(per_example.detach()) * per_example).mean()
    grads = torch.autograd.grad(weighted, model.parameters(), create_graph=True)
    stepped = {name: p - 0.1 * g for (name, p), g in zip(model.named_parameters(), grads)}
    meta = F.mse_loss(functional_call(model, stepped, (clean_x,)), clean_y)
    opt_weigher.zero_grad()
    meta.backward()
    opt_weigher.step()
    print(it, round(meta.item(), 4))
