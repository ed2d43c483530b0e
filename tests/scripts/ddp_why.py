"""DDP (gloo, CPU) whose backward misses parameters for three reasons: run under torchrun by tests/test_ddp.py."""

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.body = nn.Linear(4, 4)
        self.extra = nn.Linear(4, 4)
        self.aux_head = nn.Linear(4, 2)  # never used in forward
        self.use_extra = False

    def forward(self, x):
        feat = self.enc(x).detach()  # the encoder is cut off from the loss
        out = self.body(feat)
        if self.use_extra:
            out = out + self.extra(x)
        return out


torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(2):
    loss = model(torch.randn(3, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
