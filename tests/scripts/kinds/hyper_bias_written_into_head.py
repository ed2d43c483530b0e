"""A classifier whose head's bias is produced, per task, by a small hypernetwork from a task embedding.

The training loop writes the generated bias into the head before calling it, as one would set a weight: the
head's bias is a leaf that requires grad, and torch refuses the write.
"""

import torch
from torch import nn

torch.manual_seed(21)
N_TASKS, FEAT, CLASSES = 3, 10, 4

features = nn.Sequential(nn.Linear(FEAT, 16), nn.ReLU())
head = nn.Linear(16, CLASSES)
task_embed = nn.Embedding(N_TASKS, 5)
hyper = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, CLASSES))
opt = torch.optim.Adam(
    [*features.parameters(), *head.parameters(), *task_embed.parameters(), *hyper.parameters()], lr=1e-2
)


def batch(task):
    x = torch.randn(24, FEAT) + task
    return x, (x[:, :CLASSES].argmax(1) + task) % CLASSES


for it in range(6):
    task = it % N_TASKS
    x, y = batch(task)
    head.bias[:] = hyper(task_embed(torch.tensor(task)))
    logits = head(features(x))
    loss = nn.functional.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(it, round(loss.item(), 5))
