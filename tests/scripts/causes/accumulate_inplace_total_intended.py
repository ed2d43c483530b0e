import torch
import torch.nn.functional as F
from torch import nn


def fit(net, opt, chunks, every=3):
    acc = torch.zeros(())
    for i, (xb, yb) in enumerate(chunks):
        loss_mb = F.l1_loss(net(xb), yb)
        acc += loss_mb.detach()
        loss_mb.backward()
        if (i + 1) % every == 0:
            opt.step()
            opt.zero_grad()
    return acc.item()


torch.manual_seed(8)
mlp = nn.Sequential(nn.Linear(4, 16), nn.SiLU(), nn.Linear(16, 1))
adam = torch.optim.Adam(mlp.parameters(), lr=1e-3)
chunks = [(torch.randn(5, 4), torch.randn(5, 1)) for _ in range(9)]
print(fit(mlp, adam, chunks))
