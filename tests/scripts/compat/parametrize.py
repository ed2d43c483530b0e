"""nn.utils.parametrize: a symmetric weight, trained."""

import torch
import torch.nn.utils.parametrize as P


class Symmetric(torch.nn.Module):
    def forward(self, w):
        return w.triu() + w.triu(1).transpose(-1, -2)


torch.manual_seed(0)
layer = torch.nn.Linear(3, 3)
P.register_parametrization(layer, "weight", Symmetric())
opt = torch.optim.SGD(layer.parameters(), lr=0.1)
for step in range(3):
    loss = layer(torch.randn(4, 3)).pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 4), torch.allclose(layer.weight, layer.weight.T))
