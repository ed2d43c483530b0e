"""Per-microbatch gradient clipping (a DP-SGD-style step without the noise): one forward of the batch, the
per-example losses split into microbatches, each microbatch's gradient clipped and summed by hand."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

classifier = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 4))
sgd = torch.optim.SGD(classifier.parameters(), lr=0.1)
MAX_NORM = 0.5

for it in range(3):
    features, targets = torch.randn(24, 10), torch.randint(0, 4, (24,))
    per_example = F.cross_entropy(classifier(features), targets, reduction="none")
    total = [torch.zeros_like(p) for p in classifier.parameters()]
    chunks = per_example.chunk(4)
    for chunk in chunks:
        sgd.zero_grad()
        chunk_loss = chunk.mean()
        chunk_loss.backward(retain_graph=True)
        norm = torch.sqrt(sum((p.grad**2).sum() for p in classifier.parameters()))
        scale = torch.clamp(MAX_NORM / (norm + 1e-6), max=1.0)
        for acc, p in zip(total, classifier.parameters()):
            acc += p.grad * scale
    for acc, p in zip(total, classifier.parameters()):
        p.grad = acc / len(chunks)
    sgd.step()
