"""DDP (gloo, CPU) whose loss uses a parameter outside forward, find_unused_parameters=True: run by tests/test_ddp.py."""

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 1)
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return self.body(x)


torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(Net(), find_unused_parameters=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(2):
    x = torch.randn(3, 4) + dist.get_rank()
    loss = (model(x) * model.module.scale).pow(2).mean()  # scale: used outside forward
    opt.zero_grad()
    loss.backward()
    opt.step()
