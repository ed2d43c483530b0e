"""Fitting a small net; the author prints the gradient norm after a backward, then calls backward again."""

import torch
import torch.nn as nn

torch.manual_seed(15)
net = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
x = torch.randn(32, 5)
target = torch.randn(32, 1)

for epoch in range(5):
    optimizer.zero_grad()
    out = ((net(x) - target) ** 2).sum()
    out.backward(retain_graph=True)
    grad_norm = sum(p.grad.norm() ** 2 for p in net.parameters()) ** 0.5
    print(f"epoch {epoch}: loss {out.item():.3f}, grad norm {grad_norm:.3f}")
    out.backward()
    optimizer.step()
