"""Prototype classification of leaf shapes: the prototypes are kept inside the unit box by a method that clamps them
under no_grad, and the forward calls it after the distances were computed from them."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Prototypes(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.embed = nn.Linear(6, dim)
        self.protos = nn.Parameter(1.5 * torch.randn(classes, dim))

    def keep_in_box_(self):
        with torch.no_grad():
            self.protos.clamp_(-1.0, 1.0)

    def forward(self, x):
        z = torch.tanh(self.embed(x))
        logits = z @ self.protos.t()
        self.keep_in_box_()
        return logits


model = Prototypes(4, 3)
sgd = torch.optim.SGD(model.parameters(), lr=0.5)
for it in range(4):
    x = torch.randn(16, 6)
    y = torch.randint(0, 3, (16,))
    loss = F.cross_entropy(model(x), y)
    sgd.zero_grad()
    loss.backward()
    sgd.step()
    print(it, round(loss.item(), 4))
