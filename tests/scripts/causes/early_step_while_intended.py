import torch
import torch.nn.functional as F
from torch import nn


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 12), nn.Tanh(), nn.Linear(12, 1))

    def forward(self, x):
        return self.body(x)


torch.manual_seed(5)
net = Regressor()
sgd = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.5)
lr_sched = torch.optim.lr_scheduler.ExponentialLR(sgd, gamma=0.9)
data = [(torch.randn(10, 3), torch.randn(10, 1)) for _ in range(4)]
batches = iter(data)
while True:
    try:
        xb, yb = next(batches)
    except StopIteration:
        break
    err = F.mse_loss(net(xb), yb)
    sgd.zero_grad()
    err.backward()
    sgd.step()
    lr_sched.step()
