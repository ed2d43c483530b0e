"""torch.compile with the aot_eager backend (autograd traced by AOTAutograd, run eagerly)."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 1))
compiled = torch.compile(model, backend="aot_eager")
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(3):
    x = torch.randn(6, 4)
    loss = compiled(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 5))
