"""A frame tagger: each batch of clips is cut into chunks that a GRU cell reads in turn, its hidden state handed
from chunk to chunk; the tag loss of the whole clip goes backward once per batch."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(31)
cell = nn.GRUCell(6, 10)
head = nn.Linear(10, 3)
opt = torch.optim.Adam([*cell.parameters(), *head.parameters()], lr=1e-3)
clips = torch.randn(4, 5, 12, 6)
tags = torch.randint(0, 3, (4, 5, 12))

h = None
for clip, tag in zip(clips, tags):
    clip = F.layer_norm(clip, clip.shape[-1:])
    h = None
    logits = []
    for t in range(clip.shape[1]):
        h = cell(clip[:, t], h)
        logits.append(head(h))
    loss = F.cross_entropy(torch.stack(logits, 1).reshape(-1, 3), tag.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"{loss.item():.4f}")
