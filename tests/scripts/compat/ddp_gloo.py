"""DistributedDataParallel on gloo (CPU), run under torchrun --nproc_per_node=2: gradients averaged over ranks."""

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(rank)  # each rank its own data
for step in range(3):
    loss = model(torch.randn(5, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    total = loss.detach().clone()
    dist.all_reduce(total)
    if rank == 0:
        print(step, round(total.item() / 2, 5))
weight = model.module[0].weight.detach().clone()
gathered = [torch.empty_like(weight) for _ in range(2)]
dist.all_gather(gathered, weight)
if rank == 0:
    print(torch.equal(gathered[0], gathered[1]))  # DDP kept the replicas identical
dist.destroy_process_group()
