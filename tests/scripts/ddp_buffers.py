"""Two forwards through a DDP model with buffers (BatchNorm), one backward: what torch does with DDP's broadcast.

Run under torchrun by tests/test_ddp.py; each rank writes what it measured to facts-RANK.json in the working
directory (one file per rank: two ranks printing to one stdout can interleave their lines).
"""

import copy
import json

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
alone = copy.deepcopy(net)  # the same model without DDP: no broadcast
x_1, x_2 = torch.randn(8, 4) + 3 * rank, torch.randn(8, 4) - 2 * rank  # the ranks' data differ, so do their statistics
model = nn.parallel.DistributedDataParallel(net)  # broadcast_buffers=True: rank 0's buffers before each forward
bn = net[1]
seen = []  # running_mean as the BatchNorm layer finds it, after DDP's broadcast, before it updates it
bn.register_forward_pre_hook(
    lambda module, args: seen.append((module.running_mean._version, module.running_mean.clone()))
)
out_1 = model(x_1)
after_1 = bn.running_mean.clone()
out_2 = model(x_2)  # DDP broadcasts rank 0's buffers into every rank first
loss = out_1.pow(2).mean() + out_2.pow(2).mean()
# forward 1's graph saved the very buffer the broadcast then overwrote
saved_is_the_buffer = out_1.grad_fn._saved_running_mean.data_ptr() == bn.running_mean.data_ptr()
error = None
try:
    loss.backward()
except RuntimeError as e:
    error = str(e)
(alone(x_1).pow(2).mean() + alone(x_2).pow(2).mean()).backward()
expected = alone[0].weight.grad.clone()
dist.all_reduce(expected)  # what DDP's all-reduce computes, from gradients no broadcast touched
expected /= dist.get_world_size()
gathered = [torch.zeros(4) for _ in range(2)]
dist.all_gather(gathered, after_1)
facts = {
    "rank": rank,
    "error": error,
    "versions": [v for v, _ in seen],
    "version_after": bn.running_mean._version,
    "broadcast_changed_values": not torch.equal(seen[1][1], after_1),
    "broadcast_gave_rank_0s": torch.equal(seen[1][1], gathered[0]),
    "saved_is_the_buffer": saved_is_the_buffer,
    "grad_as_without_broadcast": net[0].weight.grad is not None and torch.allclose(net[0].weight.grad, expected),
}
with open(f"facts-{rank}.json", "w") as out:
    json.dump(facts, out)
dist.barrier()
