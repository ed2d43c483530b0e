"""A tagger with an auxiliary sparsity penalty on its gate: the gate is a sigmoid of the encoder's features,
scaled in place afterwards; the tag loss reads the gate through the classifier, the penalty reads it alone, and
one backward runs on their weighted sum."""

import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Linear(6, 8)
classifier = nn.Linear(8, 3)
opt = torch.optim.Adam([*encoder.parameters(), *classifier.parameters()], lr=1e-2)
for step in range(3):
    x, tags = torch.randn(10, 6), torch.randint(0, 3, (10,))
    gate = torch.sigmoid(encoder(x))
    gate = gate * 2.0
    tag_loss = nn.functional.cross_entropy(classifier(gate), tags)
    sparsity = gate.abs().mean()
    opt.zero_grad()
    (tag_loss + 0.1 * sparsity).backward()
    opt.step()
