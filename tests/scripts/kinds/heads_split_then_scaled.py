"""A relation scorer that splits its attention maps per head, squeezes each, and scales the first head's map
in place before the head averages it with the others."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(23)
attn = nn.Linear(5, 3 * 5)
head = nn.Linear(5, 2)
opt = torch.optim.Adam([*attn.parameters(), *head.parameters()], lr=1e-2)
for _ in range(3):
    x = torch.randn(4, 5)
    maps = torch.softmax(attn(x).view(4, 3, 5), dim=-1)
    per_head = [m.squeeze(1) for m in torch.split(maps, 1, dim=1)]
    first = per_head[0]
    first *= 2.0
    pooled = (first + per_head[1] + per_head[2]) / 4.0
    loss = F.cross_entropy(head(pooled), torch.randint(0, 2, (4,)))
    opt.zero_grad()
    loss.backward()
    opt.step()
