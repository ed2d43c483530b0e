"""A small attention classifier whose attention output projection is pruned once before fine-tuning:
nn.MultiheadAttention reads out_proj.weight without calling out_proj, so pruning's hook never recomputes it."""

import torch
import torch.nn.utils.prune as prune
from torch import nn


class Tagger(nn.Module):
    def __init__(self, dim=8, heads=2, classes=3):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        mixed, _ = self.attn(tokens, tokens, tokens)
        return self.head(mixed.mean(1))


def finetune(tagger, opt, batches):
    for tokens, labels in batches:
        logits = tagger(tokens)
        ce = nn.functional.cross_entropy(logits, labels)
        opt.zero_grad()
        ce.backward()
        opt.step()


torch.manual_seed(11)
tagger = Tagger()
prune.l1_unstructured(tagger.attn.out_proj, "weight", amount=0.25)
opt = torch.optim.SGD(tagger.parameters(), lr=0.1)
batches = [(torch.randn(4, 5, 8), torch.randint(0, 3, (4,))) for _ in range(3)]
finetune(tagger, opt, batches)
