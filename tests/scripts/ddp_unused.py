"""DDP (gloo, CPU) with an auxiliary head never used in forward: run under torchrun by tests/test_ddp.py."""

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.aux_head = nn.Linear(4, 2)  # never used in forward

    def forward(self, x):
        return self.body(x)


torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(2):
    loss = model(torch.randn(3, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
