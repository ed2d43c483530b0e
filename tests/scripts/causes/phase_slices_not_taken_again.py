"""Semi-supervised training in alternating phases: a labelled phase fits class scores, an unlabelled phase fits a
consistency target from the second half of the network's output; the halves are sliced in the labelled phase."""

import torch
from torch import nn

torch.manual_seed(9)

net = nn.Sequential(nn.Linear(7, 16), nn.ReLU(), nn.Linear(16, 6))
opt = torch.optim.SGD(net.parameters(), lr=0.05)
labelled, classes = torch.randn(10, 7), torch.randint(0, 3, (10,))
unlabelled = torch.randn(10, 7)

for epoch in range(2):
    for phase in ("labelled", "unlabelled"):
        opt.zero_grad()
        if phase == "labelled":
            out = net(labelled)
            scores, aux = out[:, :3], out[:, 3:]
            objective = nn.functional.cross_entropy(scores, classes)
        else:
            out = net(unlabelled)
            objective = (aux - aux.mean(0, keepdim=True)).pow(2).mean()
        if phase == "labelled":
            objective.backward(retain_graph=True)
        else:
            objective.backward()
        opt.step()
