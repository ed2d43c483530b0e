import torch
from torch import nn

torch.manual_seed(4)
embed = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 4))
adam = torch.optim.Adam(embed.parameters(), lr=1e-3)
anchors, positives = torch.randn(3, 16, 6), torch.randn(3, 16, 6)
for a, p in zip(anchors, positives):
    ea, ep = embed(a), embed(p)
    align = (ea - ep).pow(2).sum(1).mean()
    uniform = torch.pdist(torch.cat([ea, ep])).neg().exp().mean().log()
    adam.zero_grad()
    align.backward()
    uniform.backward()
    adam.step()
