"""A regressor trained with a running average of its weights (stochastic weight averaging by hand). Every few
steps the average is swapped in to evaluate it, then the trained weights are put back; the swaps copy into the
parameters with autograd on.
"""

import torch
from torch import nn

torch.manual_seed(11)
model = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
average = {q: q.detach().clone() for q in model.parameters()}
xs = torch.randn(64, 3)
ys = xs @ torch.tensor([[0.5], [-1.0], [2.0]])


def averaged_error(n_seen):
    kept = {}
    with torch.no_grad():
        for q in model.parameters():
            kept[q] = q.detach().clone()
            q.copy_(average[q])
    error = nn.functional.mse_loss(model(xs), ys).item()
    with torch.no_grad():
        for q in model.parameters():
            q.copy_(kept[q])
    return error


for it in range(1, 7):
    loss = nn.functional.mse_loss(model(xs), ys)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for q in model.parameters():
            average[q].mul_(it / (it + 1)).add_(q / (it + 1))
    if it % 3 == 0:
        print(it, round(loss.item(), 5), round(averaged_error(it), 5))
