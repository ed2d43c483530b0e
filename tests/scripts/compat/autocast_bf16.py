"""Mixed precision on the CPU: autocast to bfloat16 in the forward, float32 parameters."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(3):
    x = torch.randn(4, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
        loss = out.float().pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, out.dtype, round(loss.item(), 3), model[0].weight.grad.dtype)
