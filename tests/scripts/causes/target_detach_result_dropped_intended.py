"""Self-distillation where each batch's teacher logits come from the same network on a clean view.

The code means the teacher's logits to be a constant (``teacher.detach()`` on its own line), but detach returns a
new tensor and the line throws it away: the first student step's backward frees the teacher's graph, and the
second student step on the same batch backpropagates into it again.
"""

import torch
from torch import nn

torch.manual_seed(13)

net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 5))
opt = torch.optim.SGD(net.parameters(), lr=0.05)
STUDENT_STEPS = 2

for it in range(3):
    x = torch.randn(20, 12)
    teacher = net(x).softmax(dim=1)
    teacher = teacher.detach()  # the teacher is a target: a constant
    for _ in range(STUDENT_STEPS):
        noisy = x + 0.1 * torch.randn_like(x)
        loss = nn.functional.kl_div(net(noisy).log_softmax(dim=1), teacher, reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"it {it}: {loss.item():.4f}")
