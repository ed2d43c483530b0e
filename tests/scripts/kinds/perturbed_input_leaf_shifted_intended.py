"""The shift added out of place: the gradient reaches the shift network through the sum."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(14)
shift_net = nn.Linear(3, 6)
clf = nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 2))
opt = torch.optim.SGD([*shift_net.parameters(), *clf.parameters()], lr=0.05)
for step in range(3):
    batch = torch.randn(12, 6).requires_grad_()
    context = torch.randn(12, 3)
    batch = batch + 0.1 * torch.tanh(shift_net(context))
    loss = F.cross_entropy(clf(batch), torch.randint(0, 2, (12,)))
    opt.zero_grad()
    loss.backward()
    opt.step()
