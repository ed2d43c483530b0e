import torch
from torch import nn

torch.manual_seed(0)
net = nn.Linear(3, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(8, 3)

out = net(x).pow(2).sum()
opt.zero_grad()
out.backward()
opt.step()
