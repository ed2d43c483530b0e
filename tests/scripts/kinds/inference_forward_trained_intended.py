import torch
from torch import nn

torch.manual_seed(53)
first, second = nn.Linear(4, 8), nn.Linear(8, 1)
opt = torch.optim.SGD([*first.parameters(), *second.parameters()], lr=0.1)
x, y = torch.randn(10, 4), torch.randn(10, 1)
for _ in range(3):
    h = torch.relu(first(x))
    loss = nn.functional.mse_loss(second(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
