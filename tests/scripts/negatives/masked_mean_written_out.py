"""A padded sequence tagger with an auxiliary length head. The tagging loss is the usual masked mean over real tokens
((per_token * mask).sum() / mask.sum()); the length term was written per sequence and never reduced."""

import torch
import torch.nn.functional as F
from torch import nn


class Tagger(nn.Module):
    def __init__(self, vocab=20, tags=5, dim=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.tag = nn.Linear(dim, tags)
        self.length = nn.Linear(dim, 1)

    def forward(self, tokens):
        h, last = self.rnn(self.emb(tokens))
        return self.tag(h), self.length(last[-1]).squeeze(-1)


torch.manual_seed(0)
model = Tagger()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _step in range(3):
    lengths = torch.randint(3, 12, (32,))
    mask = (torch.arange(12)[None, :] < lengths[:, None]).float()
    tokens, tags = torch.randint(1, 20, (32, 12)) * mask.long(), torch.randint(0, 5, (32, 12))
    logits, len_pred = model(tokens)
    per_token = F.cross_entropy(logits.transpose(1, 2), tags, reduction="none")
    tag_loss = (per_token * mask).sum() / mask.sum()
    len_err = (len_pred - lengths.float()).abs()
    loss = tag_loss + 0.1 * len_err
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"{model.length.weight.sum().item():.6f}")
