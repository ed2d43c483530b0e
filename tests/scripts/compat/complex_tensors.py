"""Complex tensors: a complex weight trained through abs() and angle()."""

import torch

torch.manual_seed(0)
w = torch.randn(3, 3, dtype=torch.cfloat, requires_grad=True)
opt = torch.optim.Adam([w], lr=0.05)
for step in range(3):
    z = w @ torch.randn(3, 2, dtype=torch.cfloat)
    loss = z.abs().pow(2).mean() + z.angle().pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 4), w.grad.dtype)
